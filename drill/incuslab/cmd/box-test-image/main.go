// Command box-test-image builds (or finds in the cache) the Debian container images the
// Incus test lab imports (the lab's, and the one laid out like Debian's own images), and
// prints their directories. CI runs it once before `go test` so
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
	for _, r := range []incuslab.Recipe{incuslab.BookwormRecipe(), incuslab.DebianLayoutRecipe()} {
		img, err := incuslab.EnsureImage(ctx, r, log.Printf)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(img.Dir)
	}
}
