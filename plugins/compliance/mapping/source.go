package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Source is what decides a framework's mapping, for the reviewers who audit
// it: the Rego in force and the framework's definition as the Rego reads it
// at data.frameworks.<id>.
type Source struct {
	FrameworkID string `json:"framework_id"`
	// Hash is the hex SHA-256 over the Rego files and the framework's own
	// content hash; it changes when either does.
	Hash string `json:"hash"`
	// Rego lists the policy files by name, without their unit tests.
	Rego []File `json:"rego"`
	// Data is the framework definition in its canonical JSON encoding.
	Data json.RawMessage `json:"data"`
}

// Source returns the Rego and data in force for a framework.
func (m *Mapper) Source(frameworkID string) (*Source, error) {
	fw, ok := m.set.Get(frameworkID)
	if !ok {
		return nil, ErrUnknownFramework
	}
	data, err := json.Marshal(fw)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	writeField(h, m.regoHash)
	writeField(h, fw.Hash())
	return &Source{
		FrameworkID: fw.ID,
		Hash:        hex.EncodeToString(h.Sum(nil)),
		Rego:        slices.Clone(m.rego),
		Data:        data,
	}, nil
}
