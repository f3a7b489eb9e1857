package main

import "testing"

// The definition is checked at test time, not only when the host starts
// the plugin and sdk.Serve refuses it.
func TestDefinition(t *testing.T) {
	if err := New().Validate(); err != nil {
		t.Fatal(err)
	}
}
