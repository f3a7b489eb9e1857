// Command testplugin serves the runtime test plugin (see package
// testplugin). It is declared in plugins.hcl so that a fresh `make run`
// shows a plugin serving through the host.
package main

import (
	"fmt"

	"github.com/stewardhq/steward/plugins/testplugin/testplugin"
	"github.com/stewardhq/steward/sdk"
)

// A stray line before the handshake, as a careless library might print: the
// host must log it and still complete the handshake.
func init() { fmt.Println("testplugin: hello from init on stdout") }

func main() { sdk.Serve(testplugin.New()) }
