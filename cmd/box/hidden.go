package main

// hidden dispatches box's internal entry points (argv[0] "__name"), which box runs as
// helpers of its own; they are not part of the CLI and not in help.
func hidden(args []string) (int, bool) {
	switch args[0] {
	}
	return 0, false
}
