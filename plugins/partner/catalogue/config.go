package catalogue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// InlineFile names the inline config block in errors.
const InlineFile = "plugins.hcl config"

// Config is the plugin's config {} block: either catalogue_file, or the
// programme and requirements inline.
type Config struct {
	// CatalogueFile is an HCL catalogue's path; a relative path is from
	// the host's working directory, which the plugin runs in.
	CatalogueFile string            `json:"catalogue_file"`
	Programme     json.RawMessage   `json:"programme"`
	Requirements  []json.RawMessage `json:"requirements"`
}

// ConfigSchema is the JSON Schema of the config block.
const ConfigSchema = `{"type": "object", "additionalProperties": false, "properties": {
  "catalogue_file": {"type": "string"},
  "programme": {"type": "object"},
  "requirements": {"type": "array", "items": {"type": "object"}}}}`

type programmeJSON struct {
	Partner        string   `json:"partner"`
	Description    string   `json:"description"`
	Deadline       string   `json:"deadline"`
	TargetMaturity *float64 `json:"target_maturity"`
}

type requirementJSON struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Category    string          `json:"category"`
	Priority    string          `json:"priority"`
	Evidence    []string        `json:"evidence"`
	Check       json.RawMessage `json:"check"`
}

type checkJSON struct {
	Metric    string   `json:"metric"`
	Framework string   `json:"framework"`
	Target    *float64 `json:"target"`
}

// FromConfig loads the catalogue the config block holds or names. An empty
// block is refused: the plugin has nothing to check without a catalogue.
func FromConfig(raw json.RawMessage) (*Catalogue, error) {
	var cfg Config
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := strict(raw, &cfg); err != nil {
			return nil, &Error{File: InlineFile, Message: err.Error()}
		}
	}
	inline := len(cfg.Programme) > 0 || cfg.Requirements != nil
	switch {
	case cfg.CatalogueFile != "" && inline:
		return nil, &Error{File: InlineFile, Field: "catalogue_file", Message: "names a file while programme or requirements are given inline; use one"}
	case cfg.CatalogueFile != "":
		return LoadFile(cfg.CatalogueFile)
	case !inline:
		return nil, &Error{File: InlineFile, Field: "catalogue_file", Message: "is required, or programme and requirements inline"}
	}
	return parseInline(cfg)
}

func parseInline(cfg Config) (*Catalogue, error) {
	loc := inlineLocator{}
	var p programmeJSON
	if len(cfg.Programme) == 0 {
		return nil, &Error{File: InlineFile, Field: "programme", Message: "is required"}
	}
	if err := strict(cfg.Programme, &p); err != nil {
		return nil, &Error{File: InlineFile, Field: "programme", Message: err.Error()}
	}
	reqs := make([]rawRequirement, len(cfg.Requirements))
	for i, raw := range cfg.Requirements {
		var r requirementJSON
		if err := strict(raw, &r); err != nil {
			return nil, &Error{File: InlineFile, Field: fmt.Sprintf("requirements[%d]", i), Message: err.Error()}
		}
		reqs[i] = rawRequirement{ID: r.ID, Title: r.Title, Description: r.Description, Category: r.Category, Priority: r.Priority, Evidence: r.Evidence}
		if len(r.Check) > 0 && !bytes.Equal(bytes.TrimSpace(r.Check), []byte("null")) {
			var c checkJSON
			if err := strict(r.Check, &c); err != nil {
				return nil, &Error{File: InlineFile, Field: fmt.Sprintf("requirements[%d].check", i), Message: err.Error()}
			}
			reqs[i].Check = &rawCheck{Metric: c.Metric, Framework: c.Framework, Target: c.Target}
		}
	}
	return build(rawProgramme(p), reqs, loc)
}

// strict decodes one JSON object into v, refusing unknown fields and
// anything after the object.
func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fmt.Errorf("field %q: %s is not a %s", typeErr.Field, typeErr.Value, typeErr.Type)
		}
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the object")
	}
	return nil
}

// inlineLocator names fields by their path in the config block.
type inlineLocator struct{}

func (inlineLocator) at(section string, i int, field string) *Error {
	e := &Error{File: InlineFile, Field: field}
	switch {
	case section == "programme":
		e.Field = "programme." + field
	case section == "check":
		e.Field = fmt.Sprintf("requirements[%d].check.%s", i, field)
	case i >= 0:
		e.Field = fmt.Sprintf("requirements[%d].%s", i, field)
	}
	return e
}
