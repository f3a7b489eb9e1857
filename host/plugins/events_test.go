package plugins

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/host/notifications"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// TestEventTableRefusesWhatNoPluginMayDeclare keeps each event type to one
// plugin and the host's area to the host; a plugin may declare its own
// types again (a restart or reload).
func TestEventTableRefusesWhatNoPluginMayDeclare(t *testing.T) {
	var table eventTable
	anomaly := &pluginv1.EventType{Name: "cost.anomaly", Description: "A cost anomaly was found."}
	if err := table.set("cost", []*pluginv1.EventType{anomaly}); err != nil {
		t.Fatal(err)
	}
	if err := table.set("cost", []*pluginv1.EventType{anomaly}); err != nil {
		t.Errorf("the owner again: %v", err)
	}
	for name, tc := range map[string]struct {
		plugin string
		types  []*pluginv1.EventType
	}{
		"another's type": {"dmarc", []*pluginv1.EventType{anomaly}},
		"host's type":    {"dmarc", []*pluginv1.EventType{{Name: notifications.EventSyncFailed, Description: "x"}}},
		"host's area":    {"dmarc", []*pluginv1.EventType{{Name: "sync.other", Description: "x"}}},
		"bad name":       {"dmarc", []*pluginv1.EventType{{Name: "DMARC.weak", Description: "x"}}},
		"no description": {"dmarc", []*pluginv1.EventType{{Name: "dmarc.weakening"}}},
	} {
		err := table.set(tc.plugin, tc.types)
		var refused *EventTypeError
		if !errors.As(err, &refused) || !isPermanent(err) {
			t.Errorf("%s: %v, want a permanent *EventTypeError", name, err)
		}
	}
	if err := table.set("cost", nil); err != nil {
		t.Fatal(err)
	}
	if err := table.check("dmarc", []*pluginv1.EventType{anomaly}); err != nil {
		t.Errorf("a type its owner no longer declares: %v", err)
	}
}

// TestRaiseEventRefusesUndeclaredKinds answers a plugin that raises an
// event of a kind its process did not declare with InvalidArgument, before
// the host keeps anything.
func TestRaiseEventRefusesUndeclaredKinds(t *testing.T) {
	h := &hostService{sup: &Supervisor{}, plugin: "cost"}
	req := &pluginv1.RaiseEventRequest{Kind: "cost.anomaly", Severity: "warning", Title: "Spend spiked", DedupeKey: "t1/storage"}
	if _, err := h.RaiseEvent(context.Background(), req); status.Code(err) != codes.InvalidArgument {
		t.Errorf("before the description is accepted: %v, want InvalidArgument", err)
	}
	h.desc.Store(&pluginv1.DescribeResponse{EventTypes: []*pluginv1.EventType{{Name: "cost.budget_threshold", Description: "x"}}})
	if _, err := h.RaiseEvent(context.Background(), req); status.Code(err) != codes.InvalidArgument {
		t.Errorf("undeclared kind: %v, want InvalidArgument", err)
	}
	req.Kind = "cost.budget_threshold"
	if _, err := h.RaiseEvent(context.Background(), req); status.Code(err) != codes.Unavailable {
		t.Errorf("declared kind on a host without a backend: %v, want Unavailable (past the checks)", err)
	}
}

// TestEventTypesListsTheHosts offers the host's own types with no plugin
// running.
func TestEventTypesListsTheHosts(t *testing.T) {
	sup, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	got := sup.EventTypes()
	if len(got) != 2 || got[0].Name != notifications.EventNotificationTest || got[1].Name != notifications.EventSyncFailed || got[0].Source != "host" || got[1].Source != "host" {
		t.Errorf("event types = %+v", got)
	}
}
