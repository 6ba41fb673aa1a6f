// Command box-test-image builds (or finds in the cache) the Debian container images the
// Incus test lab imports (the lab's, the one laid out like Debian's own images, and the
// lab's with cloud-init), and prints their directories. scripts/test.sh runs it once
// before `go test`, so parallel test packages do not wait on each other's build and no
// test's deadline covers one:
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
	for _, r := range []incuslab.Recipe{incuslab.BookwormRecipe(), incuslab.DebianLayoutRecipe(), incuslab.CloudInitRecipe()} {
		img, err := incuslab.EnsureImage(ctx, r, log.Printf)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(img.Dir)
	}
}
