// Package policies holds the compliance plugin's policy files: the framework
// definitions under frameworks/, kept as plain data so that the opa CLI can
// load this folder as it is.
package policies

import "embed"

// FS holds the built-in framework definitions, frameworks/<id>.json.
//
//go:embed frameworks/*.json
var FS embed.FS
