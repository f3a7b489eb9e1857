// Command invalidplugin serves a plugin with mistakes in its definition,
// which sdk.Serve must refuse to serve.
package main

import (
	"context"
	"testing/fstest"

	"github.com/stewardhq/steward/sdk"
)

type config struct {
	Days int `json:"days" default:"7"`
}

func main() {
	def := sdk.Definition{Name: "invalid", Migrations: fstest.MapFS{"items.up.sql": {}}}
	sdk.Serve(def, func(context.Context, config, *sdk.Env) (*sdk.Plugin, error) { return &sdk.Plugin{}, nil })
}
