// Command testplugin serves the runtime test plugin (see package
// testplugin). It is declared in plugins.hcl so that a fresh `make run`
// shows a plugin serving through the host.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stewardhq/steward/plugins/testplugin/testplugin"
	"github.com/stewardhq/steward/sdk"
)

// A stray line before the handshake, as a careless library might print: the
// host must log it and still complete the handshake.
func init() { fmt.Println("testplugin: hello from init on stdout") }

// A copy of the binary named testplugin-<x> describes itself by that name,
// so tests can run two plugins declaring the same routes.
func main() {
	def := testplugin.Definition()
	if name := filepath.Base(os.Args[0]); strings.HasPrefix(name, "testplugin-") {
		def.Name = name
	}
	sdk.Serve(def, testplugin.New)
}
