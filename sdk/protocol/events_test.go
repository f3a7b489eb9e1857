package protocol_test

import (
	"errors"
	"strings"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

func TestCheckEventKind(t *testing.T) {
	for kind, ok := range map[string]bool{
		"cost.budget_threshold":           true,
		"a1.b_2":                          true,
		"":                                false,
		"cost":                            false,
		"cost.budget.threshold":           false,
		"Cost.anomaly":                    false,
		"cost.anomaly-x":                  false,
		"cost." + strings.Repeat("a", 96): false,
	} {
		if err := protocol.CheckEventKind(kind); (err == nil) != ok {
			t.Errorf("CheckEventKind(%q) = %v, want ok %v", kind, err, ok)
		}
	}
}

func TestCheckEventTypes(t *testing.T) {
	good := &pluginv1.EventType{Name: "cost.anomaly", Description: "A cost anomaly was found."}
	if err := protocol.CheckEventTypes([]*pluginv1.EventType{good, {Name: "cost.budget_threshold", Description: "A budget threshold was crossed."}}); err != nil {
		t.Errorf("good types: %v", err)
	}
	for name, types := range map[string][]*pluginv1.EventType{
		"bad name":            {{Name: "Cost", Description: "x"}},
		"host area":           {{Name: "sync.failed", Description: "x"}},
		"twice":               {good, good},
		"no description":      {{Name: "cost.x"}},
		"long description":    {{Name: "cost.x", Description: strings.Repeat("x", protocol.MaxEventDescription+1)}},
		"control description": {{Name: "cost.x", Description: "a\x00b"}},
	} {
		if err := protocol.CheckEventTypes(types); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCheckRaiseEvent(t *testing.T) {
	declared := []*pluginv1.EventType{{Name: "cost.anomaly", Description: "A cost anomaly was found."}}
	good := func() *pluginv1.RaiseEventRequest {
		return &pluginv1.RaiseEventRequest{Kind: "cost.anomaly", Severity: "warning", TenantId: "t1", Title: "Spend spiked",
			Message: "Storage rose 300 %.\nLook at it.", Link: "/cost/anomalies?tenant_id=t1", Details: []byte(`{"a":1}`),
			Recipients: []string{"ops@example.com"}, DedupeKey: "t1/storage/2026-03-01"}
	}
	if err := protocol.CheckRaiseEvent(good(), declared); err != nil {
		t.Fatalf("good event: %v", err)
	}
	for field, change := range map[string]func(r *pluginv1.RaiseEventRequest){
		"kind":          func(r *pluginv1.RaiseEventRequest) { r.Kind = "cost.other" },
		"severity":      func(r *pluginv1.RaiseEventRequest) { r.Severity = "" },
		"title":         func(r *pluginv1.RaiseEventRequest) { r.Title = strings.Repeat("t", protocol.MaxEventTitle+1) },
		"message":       func(r *pluginv1.RaiseEventRequest) { r.Message = "a\x07b" },
		"link":          func(r *pluginv1.RaiseEventRequest) { r.Link = "https://evil.example/" },
		"dedupe_key":    func(r *pluginv1.RaiseEventRequest) { r.DedupeKey = "" },
		"recipients":    func(r *pluginv1.RaiseEventRequest) { r.Recipients = make([]string, protocol.MaxEventRecipients+1) },
		"recipients[1]": func(r *pluginv1.RaiseEventRequest) { r.Recipients = []string{"a@example.com", "not an address"} },
		"details":       func(r *pluginv1.RaiseEventRequest) { r.Details = []byte(`[1]`) },
	} {
		r := good()
		change(r)
		var ee *protocol.EventError
		if err := protocol.CheckRaiseEvent(r, declared); !errors.As(err, &ee) || ee.Field != field {
			t.Errorf("bad %s: %v", field, err)
		}
	}
}
