# Build box and install it with its shell completions and man pages.
#
#   make                          build $(BUILDDIR)/box, its completions and man pages
#   sudo make install             install under $(PREFIX) (default /usr/local)
#   sudo make uninstall           remove what install put there
#   make install PREFIX=$HOME/.local
#   make install DESTDIR=/tmp/stage PREFIX=/usr     (for packagers)
#
# Runtime tools (bubblewrap, passt, slirp4netns) come from the system: scripts/install.sh
# or box --check say what is missing.

PREFIX   ?= /usr/local
DESTDIR  ?=
GO       ?= go
BUILDDIR ?= build
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

bindir   := $(PREFIX)/bin
datadir  := $(PREFIX)/share
man1dir  := $(datadir)/man/man1
bashdir  := $(datadir)/bash-completion/completions
zshdir   := $(datadir)/zsh/site-functions
fishdir  := $(datadir)/fish/vendor_completions.d

BOX := $(BUILDDIR)/box

.PHONY: all build completions man install uninstall clean

all: build completions man

# Always handed to go build: its cache decides what is stale.
build:
	@mkdir -p $(BUILDDIR)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BOX) ./cmd/box

completions: build
	$(BOX) completion bash > $(BUILDDIR)/box.bash
	$(BOX) completion zsh > $(BUILDDIR)/_box
	$(BOX) completion fish > $(BUILDDIR)/box.fish

man: build
	rm -rf $(BUILDDIR)/man
	$(BOX) man $(BUILDDIR)/man

install: all
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(man1dir) $(DESTDIR)$(bashdir) $(DESTDIR)$(zshdir) $(DESTDIR)$(fishdir)
	install -m 0755 $(BOX) $(DESTDIR)$(bindir)/box
	install -m 0644 $(BUILDDIR)/box.bash $(DESTDIR)$(bashdir)/box
	install -m 0644 $(BUILDDIR)/_box $(DESTDIR)$(zshdir)/_box
	install -m 0644 $(BUILDDIR)/box.fish $(DESTDIR)$(fishdir)/box.fish
	install -m 0644 $(BUILDDIR)/man/*.1 $(DESTDIR)$(man1dir)/

# Removes the binary, the three completion files and box's man pages (box.1, box-*.1).
uninstall:
	rm -f $(DESTDIR)$(bindir)/box
	rm -f $(DESTDIR)$(bashdir)/box $(DESTDIR)$(zshdir)/_box $(DESTDIR)$(fishdir)/box.fish
	rm -f $(DESTDIR)$(man1dir)/box.1 $(DESTDIR)$(man1dir)/box-*.1

clean:
	rm -rf $(BUILDDIR)
