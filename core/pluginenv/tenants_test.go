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

// TestTenantNamesAskedOnce: under OneAsk, tenants already asked about —
// named or not listed — are answered without the host (here, once the
// context is cancelled, a call of the host would fail), and a tenant not
// yet asked about is asked.
func TestTenantNamesAskedOnce(t *testing.T) {
	_, host := serve(t)
	ctx, cancel := context.WithCancel(pluginenv.OneAsk(context.Background()))
	if names, err := pluginenv.TenantNames(ctx, host, []string{"b", "a", "zz"}); err != nil || fmt.Sprint(names) != "map[a:Alpha b:Beta]" {
		t.Fatalf("first ask: %v, %v", names, err)
	}
	cancel()
	if names, err := pluginenv.TenantNames(ctx, host, []string{"zz", "a", "b", "a"}); err != nil || fmt.Sprint(names) != "map[a:Alpha b:Beta]" {
		t.Errorf("asked again: %v, %v; want the first answer without the host", names, err)
	}
	if names, err := pluginenv.TenantNames(ctx, host, []string{"a", "d"}); err == nil {
		t.Errorf("a tenant not yet asked about, under a cancelled context: %v, want the host's error", names)
	}
}
