// Command invalidplugin serves a plugin with two mistakes in its
// definition, which sdk.Serve must refuse to serve.
package main

import (
	"context"

	"github.com/stewardhq/steward/sdk"
)

func main() {
	sdk.Serve(&sdk.Plugin{
		Name:   "invalid",
		Routes: []sdk.Route{{Method: "GET", Path: "/api/v1/invalid/{id}"}},
		Jobs:   []sdk.Job{{Name: "sync", Run: func(context.Context, *sdk.JobRun) (int64, error) { return 0, nil }}},
	})
}
