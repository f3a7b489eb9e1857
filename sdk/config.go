package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// Duration is a length of time a config block gives as a string such as
// "30s", "5m" or "1h30m" (Go's time.ParseDuration syntax, never negative).
// Its schema is a string with that pattern, so the host refuses anything
// else before the plugin starts. Convert it with time.Duration(d).
type Duration time.Duration

// durationPattern is time.ParseDuration's syntax without a sign.
const durationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

// Schema is Duration's JSON Schema.
func (Duration) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Pattern: durationPattern, PatternDescription: "a duration such as 30s, 5m or 1h30m"}
}

// MarshalJSON writes the duration as time.Duration.String does.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a non-negative duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("a duration is a string such as 30s")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration such as 30s", s)
	}
	*d = Duration(v)
	return nil
}

// binding is a Definition with its factory, its config type C erased so
// that one server serves every plugin. Serve and the test harness bind
// the same way.
type binding struct {
	def     Definition
	cfgType reflect.Type
	factory reflect.Value
	// schema is the config block's JSON Schema, derived from C.
	schema []byte
}

var (
	contextType = reflect.TypeFor[context.Context]()
	envType     = reflect.TypeFor[*Env]()
	pluginType  = reflect.TypeFor[*Plugin]()
	errorType   = reflect.TypeFor[error]()
)

// bind checks def and the factory, a
// func(context.Context, C, *Env) (*Plugin, error), and derives C's schema.
func bind(def Definition, factory any) (*binding, error) {
	fv := reflect.ValueOf(factory)
	ft := fv.Type()
	if ft.Kind() != reflect.Func || fv.IsNil() || ft.NumIn() != 3 || ft.NumOut() != 2 || ft.In(0) != contextType || ft.In(2) != envType ||
		ft.Out(0) != pluginType || ft.Out(1) != errorType {
		return nil, fmt.Errorf("factory: %s is not a func(context.Context, C, *sdk.Env) (*sdk.Plugin, error)", ft)
	}
	b := &binding{def: def, cfgType: ft.In(1), factory: fv}
	var errs []error
	if def.Name == "" {
		errs = append(errs, errors.New("definition: Name is empty"))
	}
	var v validation
	v.migrations(def.Migrations)
	errs = append(errs, v.errs...)
	schema, err := configSchema(b.cfgType, b.defaults())
	if err != nil {
		errs = append(errs, fmt.Errorf("config type %s: %w", b.cfgType, err))
	}
	b.schema = schema
	return b, errors.Join(errs...)
}

// defaults is the value the config block is decoded over: C's Defaults()
// when C has that method, else C's zero value.
func (b *binding) defaults() reflect.Value {
	cfg := reflect.New(b.cfgType).Elem()
	if m := cfg.MethodByName("Defaults"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 && m.Type().Out(0) == b.cfgType {
		cfg.Set(m.Call(nil)[0])
	}
	return cfg
}

// decode reads a config block into C, over its defaults: a key the block
// leaves out keeps its default, and a key C does not have is refused.
func (b *binding) decode(raw json.RawMessage) (reflect.Value, error) {
	cfg := reflect.New(b.cfgType)
	cfg.Elem().Set(b.defaults())
	if len(bytes.TrimSpace(raw)) == 0 {
		return cfg.Elem(), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg.Interface()); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return reflect.Value{}, fmt.Errorf("config.%s: %s is not a %s", typeErr.Field, typeErr.Value, typeErr.Type)
		}
		return reflect.Value{}, fmt.Errorf("config: %w", err)
	}
	if dec.More() {
		return reflect.Value{}, errors.New("config: unexpected data after the object")
	}
	return cfg.Elem(), nil
}

// build decodes the config block and runs the factory with it.
func (b *binding) build(ctx context.Context, raw json.RawMessage, env *Env) (*Plugin, error) {
	cfg, err := b.decode(raw)
	if err != nil {
		return nil, err
	}
	out := b.factory.Call([]reflect.Value{reflect.ValueOf(ctx), cfg, reflect.ValueOf(env)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	p, _ := out[0].Interface().(*Plugin)
	if p == nil {
		return nil, errors.New("the factory returned no plugin")
	}
	return p, nil
}

// configSchema derives the config block's JSON Schema from the Go type,
// as huma derives a request body's: json names, `doc`, `minimum`,
// `maximum`, `enum`, `pattern` and the other validation tags, no member
// beyond the type's (additionalProperties false), and a member required
// unless its json tag says omitempty or it has a default. Defaults are
// those of defaults, C's Defaults() or zero value; a config value is never
// null. Nested types are written out in place, as in an operation.
func configSchema(t reflect.Type, defaults reflect.Value) (b []byte, err error) {
	defer func() {
		// huma panics on a type it cannot describe (a field both nullable
		// and an object, a dependentRequired naming no field…).
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if t.Kind() != reflect.Struct {
		return nil, errors.New("a config type must be a struct")
	}
	s := SchemaOf(reflect.New(t).Elem().Interface())
	if err := noDefaultTags(s, ""); err != nil {
		return nil, err
	}
	dv, err := json.Marshal(defaults.Interface())
	if err != nil {
		return nil, fmt.Errorf("defaults: %w", err)
	}
	zv, err := json.Marshal(reflect.New(t).Elem().Interface())
	if err != nil {
		return nil, err
	}
	var dj, zj any
	if err := json.Unmarshal(dv, &dj); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(zv, &zj); err != nil {
		return nil, err
	}
	settle(s, dj, zj)
	return json.Marshal(s)
}

// noDefaultTags refuses a `default` tag: the SDK applies the defaults of
// Defaults(), so a tag's would be documented but never applied.
func noDefaultTags(s *huma.Schema, at string) error {
	if s == nil {
		return nil
	}
	if s.Default != nil {
		return fmt.Errorf("%s: a default tag is not applied; give defaults in a Defaults() method", strings.TrimPrefix(at, "."))
	}
	for name, p := range s.Properties {
		if err := noDefaultTags(p, at+"."+name); err != nil {
			return err
		}
	}
	return noDefaultTags(s.Items, at+"[]")
}

// settle makes s a config schema: no value is null, and each member whose
// default differs from its zero value has it as its default and is not
// required.
func settle(s *huma.Schema, defaults, zero any) {
	if s == nil {
		return
	}
	s.Nullable = false
	settle(s.Items, nil, nil)
	if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
		settle(ap, nil, nil)
	}
	dm, _ := defaults.(map[string]any)
	zm, _ := zero.(map[string]any)
	var required []string
	for _, name := range s.Required {
		if d, ok := dm[name]; ok && !reflect.DeepEqual(d, zm[name]) {
			continue
		}
		required = append(required, name)
	}
	s.Required = required
	for name, p := range s.Properties {
		d, hasDefault := dm[name]
		if hasDefault && !reflect.DeepEqual(d, zm[name]) {
			if _, object := d.(map[string]any); !object {
				p.Default = d
			}
		}
		settle(p, d, zm[name])
	}
	s.PrecomputeMessages()
}
