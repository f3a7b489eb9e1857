package sdk_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

type quota struct {
	Name     string     `json:"name"`
	Limit    float64    `json:"limit"`
	SyncedAt *time.Time `json:"synced_at" nullable:"true"`
}

type page struct {
	Items []quota          `json:"items"`
	By    map[string]quota `json:"by"`
	Total int              `json:"total"`
}

// TestResponseSchemaTravels: a response schema declared with SchemaOf
// reaches the host whole — nested types inline, nullable kept — through
// the operation's JSON, as Describe sends it.
func TestResponseSchemaTravels(t *testing.T) {
	op := &huma.Operation{OperationID: "quotas", Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Quotas", page{})}}
	b, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "$ref") {
		t.Fatalf("schema refers to components the host does not have: %s", b)
	}
	got, err := protocol.DecodeOperation(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	s := got.Responses["200"].Content["application/json"].Schema
	items := s.Properties["items"]
	if items == nil || items.Type != huma.TypeArray || !items.Nullable || items.Items == nil || items.Items.Properties["limit"].Type != huma.TypeNumber {
		t.Fatalf("items schema %+v", items)
	}
	if at := items.Items.Properties["synced_at"]; at.Type != huma.TypeString || !at.Nullable || at.Format != "date-time" {
		t.Errorf("synced_at schema %+v", at)
	}
	if by, ok := s.AdditionalProperties.(bool); ok && by {
		t.Errorf("page allows unknown members")
	}
	again, err := json.Marshal(got)
	if err != nil || !strings.Contains(string(again), `"type":["array","null"]`) {
		t.Errorf("re-encoded operation %s (%v)", again, err)
	}
}

func TestDecodeOperationRefusesReferences(t *testing.T) {
	_, err := protocol.DecodeOperation([]byte(`{"operationId":"x","responses":{"200":{"description":"OK","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Page"}}}}}}`))
	if err == nil || !strings.Contains(err.Error(), "inline") {
		t.Errorf("a $ref schema: %v", err)
	}
}
