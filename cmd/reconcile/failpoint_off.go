//go:build !failpoints

package main

// failpoints is false in the binary deployed: no environment variable can
// make it kill itself.
const failpoints = false

// crashHook is the crash tests' hook, which a binary built without
// -tags failpoints does not have.
func crashHook() func(point string) { return func(string) {} }
