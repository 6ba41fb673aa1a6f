# Evaluates flake.nix's outputs against a stub nixpkgs, offline, and returns a summary
# for packaging's tests: the shape of the outputs (systems, attribute names) and the
# arguments the flake gives buildGoModule. The stub is not nixpkgs: it proves the flake
# is wired as intended (and names only the attributes listed here), not that it builds.
#   nix-instantiate --eval --strict --json --arg flake ./flake.nix eval-flake.nix
{ flake }:
let
  inherit (builtins) attrNames listToAttrs map concatStringsSep mapAttrs;
  f = import flake;

  lib = {
    genAttrs = names: fn: listToAttrs (map (n: { name = n; value = fn n; }) names);
    makeBinPath = ps: concatStringsSep ":" (map (p: "${p}/bin") ps);
    optionalString = cond: s: if cond then s else "";
    platforms.linux = [ "x86_64-linux" "aarch64-linux" ];
  };

  drv = kind: args: {
    type = "derivation";
    inherit kind args;
    name = "${args.pname or "shell"}-${args.version or "0"}";
    outPath = "/nix/store/00000000000000000000000000000000-${args.pname or "shell"}";
    overrideAttrs = g: drv kind (args // g args);
  };

  pkgsFor = system: {
    inherit lib;
    stdenv.hostPlatform.system = system;
    stdenv.buildPlatform.canExecute = _: true;
    buildGo126Module = drv "buildGoModule";
    mkShell = drv "mkShell";
    bubblewrap = "/stub/bubblewrap";
    passt = "/stub/passt";
    slirp4netns = "/stub/slirp4netns";
    incus.client = "/stub/incus-client";
    makeWrapper = "/stub/makeWrapper";
    makeBinaryWrapper = "/stub/makeBinaryWrapper";
    installShellFiles = "/stub/installShellFiles";
    go_1_26 = "/stub/go";
    gnumake = "/stub/gnumake";
    nftables = "/stub/nftables";
    nix = "/stub/nix";
    nixpkgs-fmt = "/stub/nixpkgs-fmt";
  };

  nixpkgs = {
    inherit lib;
    legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" "riscv64-linux" ] pkgsFor;
  };
  self = f.outputs { inherit self nixpkgs; } // { shortRev = "abc1234"; outPath = "/stub/src"; };

  goArgs = d: {
    inherit (d.args) pname version vendorHash subPackages ldflags postInstall doCheck;
    nativeBuildInputs = d.args.nativeBuildInputs or [ ];
    CGO_ENABLED = d.args.env.CGO_ENABLED;
    checkPhase = d.args.checkPhase or "";
  };
in
{
  inputs = mapAttrs (_: i: i.url) f.inputs;
  outputs = mapAttrs (_: attrNames) (removeAttrs self [ "shortRev" "outPath" ]);
  packages = mapAttrs (_: ps: mapAttrs (_: goArgs) ps) self.packages;
  apps = self.apps;
  devShells = mapAttrs (_: s: { packages = s.default.args.packages; }) self.devShells;
  checks = mapAttrs (_: cs: mapAttrs (_: goArgs) cs) self.checks;
}
