package pluginenv_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stewardhq/steward/core/pluginenv"
)

// TestTenantNames: ids are named once each, an id the directory does not
// list (unknown or inactive) is left out, and no ids give an empty map.
func TestTenantNames(t *testing.T) {
	ctx := context.Background()
	_, host := serve(t)
	names, err := pluginenv.TenantNames(ctx, host, []string{"b", "a", "b", "zz", "d"})
	if err != nil || fmt.Sprint(names) != "map[a:Alpha b:Beta]" {
		t.Errorf("names %v, %v; want a and b", names, err)
	}
	names, err = pluginenv.TenantNames(ctx, host, nil)
	if err != nil || names == nil || len(names) != 0 {
		t.Errorf("no ids: %v, %v", names, err)
	}
}
