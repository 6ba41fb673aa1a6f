// Package boxtest is what the live tests of box share: the box binary built once per
// test binary, the planted unprivileged world that runs it, the lab and pty helpers.
// Only tests import it; the live tests sit beside the code they prove (backend/bwrap,
// backend/vm, host, drill), and each package keeps its own short adapter with the
// unexported names its tests were written against.
package boxtest
