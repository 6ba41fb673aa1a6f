{
  description = "box: a place for an untrusted command to work, away from your secrets, LAN and host";

  # No flake.lock is committed: it cannot be generated offline. The first `nix build`,
  # `nix run` or `nix flake lock` on a machine with internet access pins nixpkgs.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      version = "0-unstable-${self.shortRev or self.dirtyShortRev or "dirty"}";

      # The NAR hash of `go mod vendor` (what buildGoModule's goModules derivation
      # hashes). Never edit by hand: scripts/vendorhash.sh --write; CI runs
      # scripts/check-flake.sh, which fails when this is stale.
      vendorHash = "sha256-4ddPhzETk1snoKa+tvAE2CiFt0VpIXArlzegL0TS31Y=";

      # What box runs: bubblewrap for sandboxes, pasta (passt) and slirp4netns for their
      # network tiers, the incus client for vm boxes ('box incus').
      runtimeInputs = pkgs: [ pkgs.bubblewrap pkgs.passt pkgs.slirp4netns pkgs.incus.client ];

      mkBox = pkgs: pkgs.buildGo126Module {
        pname = "box";
        inherit version vendorHash;
        src = ./.;
        subPackages = [ "cmd/box" ];

        env.CGO_ENABLED = 0;
        ldflags = [ "-s" "-w" "-X main.version=${version}" ];

        # A compiled wrapper, not makeWrapper's bash script: every box call (an agent's
        # every tool call) would start bash first (issue 24, start-up).
        nativeBuildInputs = [ pkgs.makeBinaryWrapper pkgs.installShellFiles ];

        # The unit tests are checks.<system>.unit; the real sandbox tests need root and
        # a kernel the build sandbox does not give.
        doCheck = false;

        # Completions and man pages come from box itself (so not when cross-compiling),
        # before it is wrapped.
        postInstall = pkgs.lib.optionalString (pkgs.stdenv.buildPlatform.canExecute pkgs.stdenv.hostPlatform) ''
          installShellCompletion --cmd box \
            --bash <($out/bin/box completion bash) \
            --zsh <($out/bin/box completion zsh) \
            --fish <($out/bin/box completion fish)
          $out/bin/box man man1
          installManPage man1/*.1
        '' + ''
          wrapProgram $out/bin/box --prefix PATH : ${pkgs.lib.makeBinPath (runtimeInputs pkgs)}
        '';

        meta = {
          description = "A place for an untrusted command (a coding agent) to work, away from your secrets, LAN and host";
          homepage = "https://github.com/heavy-duty/box";
          mainProgram = "box";
          platforms = pkgs.lib.platforms.linux;
        };
      };
    in
    {
      packages = forAllSystems (pkgs:
        let box = mkBox pkgs; in {
          inherit box;
          default = box;
        });

      apps = forAllSystems (pkgs:
        let
          app = {
            type = "app";
            program = "${self.packages.${pkgs.stdenv.hostPlatform.system}.box}/bin/box";
            meta.description = "box: run an untrusted command in a sandbox (nix run .#box -- run -y)";
          };
        in {
          box = app;
          default = app;
        });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = [ pkgs.go_1_26 pkgs.gnumake pkgs.nftables pkgs.nix ] ++ runtimeInputs pkgs;
        };
      });

      checks = forAllSystems (pkgs:
        let box = mkBox pkgs; in {
          # The package builds, with its completions and man pages.
          package = box;
          # The unit tests of every package, from the vendored modules. What needs root,
          # bwrap or nix-bin skips with its reason (CI=true is not set in the sandbox).
          unit = box.overrideAttrs (_: {
            pname = "box-unit-tests";
            doCheck = true;
            checkPhase = ''
              runHook preCheck
              export GOFLAGS=''${GOFLAGS//-trimpath/}
              export HOME=$TMPDIR
              go test -count=1 ./...
              runHook postCheck
            '';
          });
        });

      formatter = forAllSystems (pkgs: pkgs.nixpkgs-fmt);
    };
}
