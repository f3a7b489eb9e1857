package sdk_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/stewardhq/steward/sdk"
)

type preparedBody struct {
	sdk.Prepared
	Name string `json:"name"`
	N    int    `json:"n"`
}

type plainBody struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// Prepared adds nothing to a body's schema or to its encoding.
func TestPreparedAddsNothing(t *testing.T) {
	got, _ := json.Marshal(sdk.SchemaOf(preparedBody{}))
	want, _ := json.Marshal(sdk.SchemaOf(plainBody{}))
	if string(got) != string(want) {
		t.Errorf("schema with Prepared = %s, want %s", got, want)
	}
	body := &preparedBody{Name: "a", N: 1}
	if err := sdk.Prepare(body); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(body)
	if string(again) != `{"name":"a","n":1}` {
		t.Errorf("prepared body encodes as %s", again)
	}
}

// A prepared body is answered as the bytes Prepare kept; one not prepared
// is encoded for its answer.
func TestPreparedBodyAnswersItsBytes(t *testing.T) {
	kept := &preparedBody{Name: "kept", N: 1}
	if err := sdk.Prepare(kept); err != nil {
		t.Fatal(err)
	}
	// Changed after Prepare, which a handler must not do: the answer shows
	// the bytes are the ones kept, not a new encoding.
	kept.Name = "changed"
	p := &sdk.Plugin{Routes: []sdk.Route{
		sdk.Get("/kept", sdk.Op{ID: "kept"}, func(context.Context, *sdk.Empty) (*preparedBody, error) { return kept, nil }),
		sdk.Get("/fresh", sdk.Op{ID: "fresh"}, func(context.Context, *sdk.Empty) (*preparedBody, error) {
			return &preparedBody{Name: "fresh", N: 2}, nil
		}),
	}}
	h := p.HTTPHandler()
	for path, want := range map[string]plainBody{"/kept": {"kept", 1}, "/fresh": {"fresh", 2}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		var got plainBody
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
			t.Fatalf("GET %s = %d %s: %v", path, w.Code, w.Body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s = %+v, want %+v", path, got, want)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s Content-Type = %q", path, ct)
		}
	}
}
