package sdk

import (
	"encoding/json"
	"io"

	"github.com/danielgtaylor/huma/v2"
)

// Prepared keeps a response body encoded. Embed it in a route's output type
// when the handler answers the same body many times between changes of its
// data, as a body kept under a revision (core/revcache) is: Prepare encodes
// the body once, and the SDK writes those bytes for each answer instead of
// encoding the body again. A body whose Prepared is zero is encoded as
// usual. Prepared adds nothing to the body or to its schema.
type Prepared struct{ encoded []byte }

func (p *Prepared) prepared() *Prepared { return p }

// Preparable is an output type that embeds Prepared, through a pointer.
type Preparable interface{ prepared() *Prepared }

// Prepare encodes body and keeps the bytes in it; every answer of body is
// then those bytes. Change nothing in body afterwards: its answers would
// not show it. A body kept for many requests is shared by them: prepare it
// once, before it is kept.
func Prepare(body Preparable) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	body.prepared().encoded = b
	return nil
}

// jsonFormat is huma's JSON format, writing a prepared body's bytes as
// they are.
var jsonFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		if p, ok := v.(Preparable); ok && p.prepared().encoded != nil {
			_, err := w.Write(p.prepared().encoded)
			return err
		}
		return huma.DefaultJSONFormat.Marshal(w, v)
	},
	Unmarshal: huma.DefaultJSONFormat.Unmarshal,
}
