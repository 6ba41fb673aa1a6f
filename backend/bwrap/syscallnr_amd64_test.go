package bwrap_test

// connectNr is connect(2)'s number as /proc/TID/syscall shows it.
const connectNr = "42"
