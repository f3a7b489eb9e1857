package catalogue

import (
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The HCL file's shape, decoded by gohcl, which refuses unknown arguments
// and blocks and missing required ones with their positions.
type fileHCL struct {
	Programme    programmeHCL     `hcl:"programme,block"`
	Requirements []requirementHCL `hcl:"requirement,block"`
}

type programmeHCL struct {
	Partner        string  `hcl:"partner"`
	Description    string  `hcl:"description,optional"`
	Deadline       string  `hcl:"deadline"`
	TargetMaturity float64 `hcl:"target_maturity"`
}

type requirementHCL struct {
	ID          string    `hcl:"id,label"`
	Title       string    `hcl:"title"`
	Description string    `hcl:"description,optional"`
	Category    string    `hcl:"category"`
	Priority    string    `hcl:"priority"`
	Evidence    []string  `hcl:"evidence,optional"`
	Check       *checkHCL `hcl:"check,block"`
}

type checkHCL struct {
	Metric    string  `hcl:"metric"`
	Framework string  `hcl:"framework,optional"`
	Target    float64 `hcl:"target"`
}

// LoadFile reads and loads the HCL catalogue at path.
func LoadFile(path string) (*Catalogue, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	return Parse(path, src)
}

// Parse loads an HCL catalogue; filename names it in errors.
//
//	programme {
//	  partner         = "Northwind Bank"
//	  deadline        = "2027-03-31"
//	  target_maturity = 3.5
//	}
//	requirement "IAM-01" {
//	  title    = "MFA for every account"
//	  category = "identity"
//	  priority = "critical"
//	  evidence = ["Conditional access policy export"]
//	  check {
//	    metric = "mfa_coverage"
//	    target = 95
//	  }
//	}
func Parse(filename string, src []byte) (*Catalogue, error) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	body := file.Body.(*hclsyntax.Body)
	var f fileHCL
	if diags := gohcl.DecodeBody(body, nil, &f); diags.HasErrors() {
		e := diagError(diags)
		if e, ok := e.(*Error); ok {
			e.Field = fieldAt(body, e.Line, e.Column, "")
		}
		return nil, e
	}
	p := rawProgramme{Partner: f.Programme.Partner, Description: f.Programme.Description, Deadline: f.Programme.Deadline,
		TargetMaturity: &f.Programme.TargetMaturity}
	reqs := make([]rawRequirement, len(f.Requirements))
	for i, r := range f.Requirements {
		reqs[i] = rawRequirement{ID: r.ID, Title: r.Title, Description: r.Description, Category: r.Category, Priority: r.Priority, Evidence: r.Evidence}
		if r.Check != nil {
			reqs[i].Check = &rawCheck{Metric: r.Check.Metric, Framework: r.Check.Framework, Target: &r.Check.Target}
		}
	}
	return build(p, reqs, &hclLocator{file: filename, body: body})
}

// diagError is the first error of diags as an Error at its subject.
func diagError(diags hcl.Diagnostics) error {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		e := &Error{Message: d.Summary}
		if d.Detail != "" {
			e.Message += ": " + d.Detail
		}
		if d.Subject != nil {
			e.File, e.Line, e.Column = d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
		}
		return e
	}
	return diags
}

// fieldAt names the attribute of body, or of a block nested in it, that
// holds the position, by its path (requirement "IAM-01".check.target);
// empty when none does.
func fieldAt(body *hclsyntax.Body, line, column int, prefix string) string {
	pos := hcl.Pos{Line: line, Column: column}
	inside := func(r hcl.Range) bool {
		return !(pos.Line < r.Start.Line || pos.Line == r.Start.Line && pos.Column < r.Start.Column ||
			pos.Line > r.End.Line || pos.Line == r.End.Line && pos.Column > r.End.Column)
	}
	for name, a := range body.Attributes {
		if inside(a.SrcRange) {
			return prefix + name
		}
	}
	for _, b := range body.Blocks {
		if !inside(b.Range()) {
			continue
		}
		name := b.Type
		for _, l := range b.Labels {
			name += fmt.Sprintf(" %q", l)
		}
		if f := fieldAt(b.Body, line, column, prefix+name+"."); f != "" {
			return f
		}
		return prefix + name
	}
	return ""
}

// hclLocator finds a field in the file's syntax: its attribute, or the
// label for a requirement's id, or the enclosing block when the field is
// not written.
type hclLocator struct {
	file string
	body *hclsyntax.Body
}

func (l *hclLocator) at(section string, i int, field string) *Error {
	e := &Error{File: l.file, Field: field}
	rng := l.body.SrcRange
	var blocks []*hclsyntax.Block
	for _, b := range l.body.Blocks {
		if b.Type == "requirement" {
			blocks = append(blocks, b)
		}
	}
	var block *hclsyntax.Block
	switch {
	case section == "programme":
		e.Field = "programme." + field
		for _, b := range l.body.Blocks {
			if b.Type == "programme" {
				block = b
			}
		}
	case i >= 0 && i < len(blocks):
		block = blocks[i]
		name := fmt.Sprintf("requirement %q.", block.Labels[0])
		if section == "check" {
			name += "check."
			for _, b := range block.Body.Blocks {
				if b.Type == "check" {
					block = b
				}
			}
		}
		e.Field = name + field
		if field == "id" {
			rng = blocks[i].LabelRanges[0]
			block = nil
		}
	}
	if block != nil {
		rng = block.DefRange()
		if a, ok := block.Body.Attributes[field]; ok {
			rng = a.SrcRange
		}
	}
	e.Line, e.Column = rng.Start.Line, rng.Start.Column
	return e
}
