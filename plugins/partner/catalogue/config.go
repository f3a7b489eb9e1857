package catalogue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// InlineFile names the inline config block in errors.
const InlineFile = "plugins.hcl config"

// Source is where the plugin's config {} block takes the catalogue from:
// either catalogue_file, or the programme and requirements inline. The
// plugin's config embeds it, so the host refuses a key or a type none of
// these declare, naming where it is in plugins.hcl; Load checks the rest.
type Source struct {
	CatalogueFile string              `json:"catalogue_file,omitempty" doc:"An HCL catalogue (format in catalogue.example.hcl); a relative path is from the host's working directory"`
	Programme     *ProgrammeSource    `json:"programme,omitempty" doc:"The programme, when the catalogue is written inline"`
	Requirements  []RequirementSource `json:"requirements,omitempty" doc:"The requirements, when the catalogue is written inline"`
}

// ProgrammeSource is the programme written inline.
type ProgrammeSource struct {
	Partner        string   `json:"partner,omitempty"`
	Description    string   `json:"description,omitempty"`
	Deadline       string   `json:"deadline,omitempty" doc:"YYYY-MM-DD"`
	TargetMaturity *float64 `json:"target_maturity,omitempty"`
}

// RequirementSource is a requirement written inline.
type RequirementSource struct {
	ID          string       `json:"id,omitempty"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Category    string       `json:"category,omitempty"`
	Priority    string       `json:"priority,omitempty"`
	Evidence    []string     `json:"evidence,omitempty"`
	Check       *CheckSource `json:"check,omitempty"`
}

// CheckSource is a requirement's automatic check written inline.
type CheckSource struct {
	Metric    string   `json:"metric,omitempty"`
	Framework string   `json:"framework,omitempty"`
	Target    *float64 `json:"target,omitempty"`
}

// FromConfig loads the catalogue a config block, as JSON, holds or names.
func FromConfig(raw json.RawMessage) (*Catalogue, error) {
	var src Source
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := strict(raw, &src); err != nil {
			return nil, &Error{File: InlineFile, Message: err.Error()}
		}
	}
	return src.Load()
}

// Load loads the catalogue the source holds or names. An empty source is
// refused: the plugin has nothing to check without a catalogue.
func (s Source) Load() (*Catalogue, error) {
	inline := s.Programme != nil || s.Requirements != nil
	switch {
	case s.CatalogueFile != "" && inline:
		return nil, &Error{File: InlineFile, Field: "catalogue_file", Message: "names a file while programme or requirements are given inline; use one"}
	case s.CatalogueFile != "":
		return LoadFile(s.CatalogueFile)
	case !inline:
		return nil, &Error{File: InlineFile, Field: "catalogue_file", Message: "is required, or programme and requirements inline"}
	case s.Programme == nil:
		return nil, &Error{File: InlineFile, Field: "programme", Message: "is required"}
	}
	p := s.Programme
	reqs := make([]rawRequirement, len(s.Requirements))
	for i, r := range s.Requirements {
		reqs[i] = rawRequirement{ID: r.ID, Title: r.Title, Description: r.Description, Category: r.Category, Priority: r.Priority, Evidence: r.Evidence}
		if c := r.Check; c != nil {
			reqs[i].Check = &rawCheck{Metric: c.Metric, Framework: c.Framework, Target: c.Target}
		}
	}
	return build(rawProgramme{Partner: p.Partner, Description: p.Description, Deadline: p.Deadline, TargetMaturity: p.TargetMaturity}, reqs, inlineLocator{})
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
