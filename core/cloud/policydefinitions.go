package cloud

import (
	"context"
	"fmt"
	"regexp"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armpolicy"
)

// PolicyDefinition is a policy definition: what a policy checks and how to
// bring a resource it finds non-compliant into compliance.
type PolicyDefinition struct {
	ID string
	// Name is the definition's resource name, the last segment of its id.
	Name        string
	DisplayName string
	Description string
	// PolicyType is BuiltIn, Custom, Static or NotSpecified.
	PolicyType string
	// Category is the metadata's category, e.g. Storage.
	Category string
	// Severity and Remediation are the metadata's securityCenter.Severity
	// and securityCenter.RemediationDescription, which the definitions
	// Defender for Cloud builds its recommendations on carry (Azure has
	// no other field for the guidance); empty when the definition has
	// none.
	Severity    string
	Remediation string
}

// policyDefinitionID splits a policy definition's ARM id: a built-in one
// (/providers/Microsoft.Authorization/policyDefinitions/{name}), a
// subscription's (/subscriptions/{id}/providers/…) or a management
// group's (/providers/Microsoft.Management/managementGroups/{id}/providers/…).
var policyDefinitionID = regexp.MustCompile(`(?i)^(?:/subscriptions/([^/]+)|/providers/Microsoft\.Management/managementGroups/([^/]+))?` +
	`/providers/Microsoft\.Authorization/policyDefinitions/([^/]+)$`)

// PolicyDefinition reads the policy definition with this ARM id, built-in,
// a subscription's or a management group's, through the one call for its
// scope. A definition that does not exist (or no longer) is an error
// matching ErrNotFound; an id of no such shape is an error too.
func (c *ResourceManager) PolicyDefinition(ctx context.Context, id string) (PolicyDefinition, error) {
	m := policyDefinitionID.FindStringSubmatch(id)
	if m == nil {
		return PolicyDefinition{}, fmt.Errorf("cloud: %q is not a policy definition id", id)
	}
	sub, group, name := m[1], m[2], m[3]
	op := "read policy definition " + id
	client, err := armpolicy.NewDefinitionsClient(sub, c.cred, c.armOpts)
	if err != nil {
		return PolicyDefinition{}, err
	}
	var def armpolicy.Definition
	switch {
	case sub != "":
		resp, gerr := client.Get(ctx, name, nil)
		def, err = resp.Definition, gerr
	case group != "":
		resp, gerr := client.GetAtManagementGroup(ctx, group, name, nil)
		def, err = resp.Definition, gerr
	default:
		resp, gerr := client.GetBuiltIn(ctx, name, nil)
		def, err = resp.Definition, gerr
	}
	if err != nil {
		return PolicyDefinition{}, wrap(op, err)
	}
	return policyDefinitionOf(&def), nil
}

func policyDefinitionOf(d *armpolicy.Definition) PolicyDefinition {
	out := PolicyDefinition{ID: deref(d.ID), Name: deref(d.Name)}
	p := d.Properties
	if p == nil {
		return out
	}
	out.DisplayName, out.Description = deref(p.DisplayName), deref(p.Description)
	if p.PolicyType != nil {
		out.PolicyType = string(*p.PolicyType)
	}
	meta, _ := p.Metadata.(map[string]any)
	out.Category, _ = meta["category"].(string)
	security, _ := meta["securityCenter"].(map[string]any)
	out.Severity, _ = security["Severity"].(string)
	out.Remediation, _ = security["RemediationDescription"].(string)
	return out
}
