package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpIsNotAnError: every command answers --help, -h or help with its
// usage and success, before touching configuration, a database or a port.
func TestHelpIsNotAnError(t *testing.T) {
	t.Setenv("STEWARD_DATABASE_URL", "postgres://nowhere.invalid:1/none")
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"serve", "-h"},
		{"sim", "--help"}, {"sim", "--world", "x.json", "-h"},
		{"migrate", "--help"}, {"migrate", "up", "--help"},
		{"plugins", "--help"}, {"plugins", "list", "-h"},
		{"apikey", "--help"}, {"apikey", "create", "--help"}, {"apikey", "help"},
		{"version", "--help"},
	} {
		var out bytes.Buffer
		if err := run(args, &out); err != nil {
			t.Errorf("steward %s: %v", strings.Join(args, " "), err)
		}
		if !strings.HasPrefix(out.String(), "usage:") {
			t.Errorf("steward %s printed %q, want its usage", strings.Join(args, " "), out.String())
		}
	}
}

func TestUnknownCommandIsAnError(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"serv"}, &out); err == nil || !strings.Contains(err.Error(), `unknown command "serv"`) {
		t.Errorf("unknown command: %v", err)
	}
	if err := run(nil, &out); err == nil {
		t.Error("no command: want an error")
	}
}
