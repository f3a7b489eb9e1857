// Package onboarding brings a customer's Azure tenant under Steward's
// management through Azure Lighthouse: it generates the deployment template
// that delegates a subscription to Steward's managing tenant, and verifies a
// delegation through the cloud before the tenant is recorded.
//
// [Routes] serve both to the customer, as pages (rendered from pages/) and
// as JSON, with a tenant's onboarding status.
package onboarding

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The built-in Azure roles a governance reader needs. The ids are the same
// in every Azure tenant.
const (
	RoleReader               = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
	RoleCostManagementReader = "72fafb9e-0641-4937-9268-a91bfd8191a3"
	RoleSecurityReader       = "39bc4728-0917-49c7-9d2c-d95423bc2eb4"
)

// Roles are the authorisations the template grants, in the order it lists
// them, with the names shown to people.
var Roles = []struct{ ID, Name string }{
	{RoleReader, "Reader"},
	{RoleCostManagementReader, "Cost Management Reader"},
	{RoleSecurityReader, "Security Reader"},
}

const (
	// SchemaURL is the schema of a subscription-scope deployment, the scope
	// Lighthouse registrations are deployed at.
	SchemaURL = "https://schema.management.azure.com/schemas/2019-08-01/subscriptionDeploymentTemplate.json#"
	// ManagedServicesAPIVersion is the Microsoft.ManagedServices API
	// version of both resources.
	ManagedServicesAPIVersion = "2022-10-01"
	// TypeRegistrationDefinition and TypeRegistrationAssignment are the
	// two Lighthouse resource types: the offer, and its assignment to the
	// subscription the template is deployed to.
	TypeRegistrationDefinition = "Microsoft.ManagedServices/registrationDefinitions"
	TypeRegistrationAssignment = "Microsoft.ManagedServices/registrationAssignments"

	// MaxOrgNameLen bounds the organisation name, in characters, so the
	// offer name stays within what the portal displays.
	MaxOrgNameLen = 100
	offerBaseName = "Steward governance"
)

// ErrInvalidOrgName is an organisation name that is too long or carries
// control characters.
var ErrInvalidOrgName = errors.New("org_name must be at most 100 characters without control characters")

// Template is an Azure Resource Manager deployment template. Its fields are
// ordered as Azure's own samples are, so the rendered JSON reads naturally.
type Template struct {
	Schema         string               `json:"$schema"`
	ContentVersion string               `json:"contentVersion"`
	Parameters     map[string]Parameter `json:"parameters"`
	Variables      map[string]string    `json:"variables"`
	Resources      []Resource           `json:"resources"`
	Outputs        map[string]Output    `json:"outputs"`
}

// Parameter is a template parameter; one without a default must be given
// at deployment.
type Parameter struct {
	Type         string            `json:"type"`
	DefaultValue any               `json:"defaultValue,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// Resource is a resource the template deploys.
type Resource struct {
	Type       string         `json:"type"`
	APIVersion string         `json:"apiVersion"`
	Name       string         `json:"name"`
	DependsOn  []string       `json:"dependsOn,omitempty"`
	Properties map[string]any `json:"properties"`
}

// Output is a value the deployment reports when it completes.
type Output struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Authorization is one role granted to a principal of the managing tenant,
// as a registration definition lists it.
type Authorization struct {
	PrincipalID            string `json:"principalId"`
	PrincipalIDDisplayName string `json:"principalIdDisplayName"`
	RoleDefinitionID       string `json:"roleDefinitionId"`
}

// CleanOrgName trims an organisation name and checks it.
func CleanOrgName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxOrgNameLen || strings.ContainsFunc(s, unicode.IsControl) {
		return "", ErrInvalidOrgName
	}
	return s, nil
}

// OfferName is the registration definition's name for an organisation: the
// name the customer sees under "Service providers" in the portal.
func OfferName(org string) string {
	if org == "" {
		return offerBaseName
	}
	return offerBaseName + " — " + org
}

// NewTemplate builds the delegation template for an organisation (already
// cleaned by CleanOrgName), granting managingTenantID's Steward principal
// the governance reader roles. The organisation name only ever follows
// fixed text in a string, never starts one: a string starting with "[" is
// an expression to Resource Manager.
func NewTemplate(org, managingTenantID string) Template {
	auths := make([]Authorization, 0, len(Roles))
	for _, r := range Roles {
		auths = append(auths, Authorization{
			PrincipalID:            "[parameters('stewardPrincipalId')]",
			PrincipalIDDisplayName: "Steward governance reader (" + r.Name + ")",
			RoleDefinitionID:       r.ID,
		})
	}
	description := "Read-only governance of costs, compliance, resources and security by Steward"
	if org != "" {
		description += " for " + org
	}
	definitionID := "[resourceId('" + TypeRegistrationDefinition + "', variables('mspRegistrationName'))]"
	return Template{
		Schema:         SchemaURL,
		ContentVersion: "1.0.0.0",
		Parameters: map[string]Parameter{
			"mspOfferName": {Type: "string", DefaultValue: OfferName(org),
				Metadata: map[string]string{"description": "Name of the offer, shown to the customer under Service providers"}},
			"mspOfferDescription": {Type: "string", DefaultValue: description,
				Metadata: map[string]string{"description": "What the offer grants, shown with its name"}},
			"managedByTenantId": {Type: "string", DefaultValue: managingTenantID,
				Metadata: map[string]string{"description": "Directory tenant id of Steward's managing tenant"}},
			"stewardPrincipalId": {Type: "string",
				Metadata: map[string]string{"description": "Object id of Steward's service principal in the managing tenant, as given by the Steward operator"}},
			"authorizations": {Type: "array", DefaultValue: auths,
				Metadata: map[string]string{"description": "Roles granted to Steward: Reader, Cost Management Reader and Security Reader"}},
		},
		Variables: map[string]string{
			"mspRegistrationName": "[guid(parameters('mspOfferName'))]",
			// One assignment per offer and subscription, so re-deploying
			// the template updates it instead of adding another.
			"mspAssignmentName": "[guid(parameters('mspOfferName'), subscription().subscriptionId)]",
		},
		Resources: []Resource{
			{
				Type: TypeRegistrationDefinition, APIVersion: ManagedServicesAPIVersion, Name: "[variables('mspRegistrationName')]",
				Properties: map[string]any{
					"registrationDefinitionName": "[parameters('mspOfferName')]",
					"description":                "[parameters('mspOfferDescription')]",
					"managedByTenantId":          "[parameters('managedByTenantId')]",
					"authorizations":             "[parameters('authorizations')]",
				},
			},
			{
				Type: TypeRegistrationAssignment, APIVersion: ManagedServicesAPIVersion, Name: "[variables('mspAssignmentName')]",
				DependsOn:  []string{definitionID},
				Properties: map[string]any{"registrationDefinitionId": definitionID},
			},
		},
		Outputs: map[string]Output{
			"mspOfferName":   {Type: "string", Value: "[concat('Managed by', ' ', parameters('mspOfferName'))]"},
			"authorizations": {Type: "array", Value: "[parameters('authorizations')]"},
		},
	}
}

// JSON renders a template indented, as a file to save and deploy. Markup
// characters are left as they are: the HTML page escapes them itself, and
// "\u003c" in a file a person edits only confuses.
func (t Template) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
