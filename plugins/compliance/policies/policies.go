// Package policies holds the compliance plugin's policy files: the framework
// definitions under frameworks/, kept as plain data, and the Rego that maps
// policy definitions to their controls, so that the opa CLI can load this
// folder as it is.
package policies

import "embed"

// FS holds the built-in framework definitions, frameworks/<id>.json.
//
//go:embed frameworks/*.json
var FS embed.FS

// Rego holds the mapping policies, *.rego at the top of the folder. The
// *_test.rego files among them are the policies' unit tests, which are not
// loaded for evaluation.
//
//go:embed *.rego
var Rego embed.FS
