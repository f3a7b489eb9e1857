package e2e

import (
	"fmt"
	"path/filepath"
)

// costPlugins declares the cost plugin, with config (HCL attributes, may
// be empty) in its config block.
func costPlugins(config string) string {
	return fmt.Sprintf("plugin \"cost\" {\n  binary = %q\n  cloud_credential = true\n  config {\n%s\n  }\n}\n", filepath.Join(binDir, "plugins", "cost"), config)
}
