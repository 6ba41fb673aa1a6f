// Command box-test-image builds (or finds in the cache) the Debian container image the
// Incus test lab imports, and prints its directory. CI runs it once before `go test` so
// parallel test packages do not wait on each other's build:
//
//	go run ./drill/incuslab/cmd/box-test-image
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/heavy-duty/box/drill/incuslab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	img, err := incuslab.EnsureImage(ctx, incuslab.BookwormRecipe(), log.Printf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(img.Dir)
}
