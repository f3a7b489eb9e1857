package app

import (
	"slices"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/config"
)

func TestAdminTenants(t *testing.T) {
	set := config.Config{OIDC: config.OIDCConfig{AdminTenants: []string{"dir-a", "dir-b"}}}
	cases := []struct {
		name string
		cfg  config.Config
		cc   cloud.Config
		want []string
	}{
		{"configured", set, cloud.Config{TenantID: "managing"}, []string{"dir-a", "dir-b"}},
		{"default: Steward's own directory", config.Config{}, cloud.Config{TenantID: "managing"}, []string{"managing"}},
		{"none known", config.Config{}, cloud.Config{}, nil},
	}
	for _, c := range cases {
		if got := adminTenants(c.cfg, c.cc); !slices.Equal(got, c.want) {
			t.Errorf("%s: adminTenants = %v, want %v", c.name, got, c.want)
		}
	}
}
