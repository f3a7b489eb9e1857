package arm

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.Authorization policy definitions: a built-in definition by
// name and the built-in list at the tenant root, a subscription's custom
// definition by name and the subscription's list (its custom definitions
// after the built-in ones, as Azure lists every definition that applies
// there), from the world's policy definitions and those its policy
// states name (world.PolicyDefinition).
//
// Azure's definitions carry no remediation field. Those Defender for
// Cloud builds its recommendations on keep their severity and remediation
// in the metadata's securityCenter object ({"Severity": "High",
// "RemediationDescription": "…"}); the simulator serves every
// definition's severity and remediation there. Lists page at
// cloudsim.DefaultPageSize or $top with a $skiptoken in nextLink;
// api-version 2021-06-01 or later.

const (
	policyDefinitionsPath = "/providers/Microsoft.Authorization/policyDefinitions"
	policyDefinitionType  = "Microsoft.Authorization/policyDefinitions"
)

func (srv *server) registerPolicyDefinitions() {
	srv.handle("GET "+policyDefinitionsPath, srv.policyDefinitionList)
	srv.handle("GET "+policyDefinitionsPath+"/{policyDefinitionName}", srv.policyDefinitionGet)
	srv.handle("GET /subscriptions/{subscriptionId}"+policyDefinitionsPath, srv.policyDefinitionList)
	srv.handle("GET /subscriptions/{subscriptionId}"+policyDefinitionsPath+"/{policyDefinitionName}", srv.policyDefinitionGet)
}

// policyDefinitionJSON is a policy definition as Microsoft.Authorization
// returns it.
type policyDefinitionJSON struct {
	ID         string                   `json:"id"`
	Name       string                   `json:"name"`
	Type       string                   `json:"type"`
	Properties policyDefinitionPropJSON `json:"properties"`
}

type policyDefinitionPropJSON struct {
	DisplayName string         `json:"displayName"`
	PolicyType  string         `json:"policyType"`
	Mode        string         `json:"mode"`
	Description string         `json:"description,omitempty"`
	Metadata    map[string]any `json:"metadata"`
	Version     string         `json:"version"`
	Parameters  map[string]any `json:"parameters"`
	PolicyRule  map[string]any `json:"policyRule"`
}

// policyDefinitions are the world's definitions, listed ones first, then
// one for each definition id the policy states name that none of those
// has (ids compared without regard to case), in the order met.
func policyDefinitions(w *world.World) []world.PolicyDefinition {
	out := slices.Clone(w.PolicyDefinitions)
	seen := map[string]bool{}
	for _, d := range out {
		seen[strings.ToLower(d.ID)] = true
	}
	for _, s := range w.PolicyStates {
		if key := strings.ToLower(s.PolicyDefinitionID); !seen[key] {
			seen[key] = true
			out = append(out, world.PolicyDefinition{ID: s.PolicyDefinitionID, DisplayName: s.PolicyName, Category: s.Category, Severity: s.Severity})
		}
	}
	return out
}

// definitionScope is the subscription a definition is a custom one of, or
// "" for a built-in one.
func definitionScope(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) > 1 && strings.EqualFold(segs[0], "subscriptions") {
		return segs[1]
	}
	return ""
}

// policyDefinitionRecord is a world definition in Azure's shape.
func policyDefinitionRecord(d world.PolicyDefinition) policyDefinitionJSON {
	meta := map[string]any{"version": "1.0.0", "category": d.Category}
	if d.Severity != "" || d.Remediation != "" {
		security := map[string]any{}
		if d.Severity != "" {
			security["Severity"] = d.Severity
		}
		if d.Remediation != "" {
			security["RemediationDescription"] = d.Remediation
		}
		meta["securityCenter"] = security
	}
	policyType := "BuiltIn"
	if definitionScope(d.ID) != "" {
		policyType = "Custom"
	}
	return policyDefinitionJSON{ID: d.ID, Name: lastSegment(d.ID), Type: policyDefinitionType, Properties: policyDefinitionPropJSON{
		DisplayName: d.DisplayName, PolicyType: policyType, Mode: "Indexed", Description: d.Description, Metadata: meta, Version: "1.0.0",
		Parameters: map[string]any{}, PolicyRule: map[string]any{"if": map[string]any{"field": "type", "equals": "*"},
			"then": map[string]any{"effect": "audit"}}}}
}

// policyDefinitionsAt are the definitions at a scope: the built-in ones
// for "", those and the subscription's custom ones for a subscription.
func (srv *server) policyDefinitionsAt(sub string) []world.PolicyDefinition {
	var builtIn, custom []world.PolicyDefinition
	for _, d := range policyDefinitions(srv.sim.World()) {
		switch scope := definitionScope(d.ID); {
		case scope == "":
			builtIn = append(builtIn, d)
		case sub != "" && strings.EqualFold(scope, sub):
			custom = append(custom, d)
		}
	}
	byName := func(a, b world.PolicyDefinition) int {
		return cmp.Compare(strings.ToLower(lastSegment(a.ID)), strings.ToLower(lastSegment(b.ID)))
	}
	slices.SortFunc(builtIn, byName)
	slices.SortFunc(custom, byName)
	return append(builtIn, custom...)
}

// policyDefinitionRequest checks what every definition route needs: a
// recent api-version and, at a subscription, one the world has.
func (srv *server) policyDefinitionRequest(w http.ResponseWriter, r *http.Request) bool {
	if sub := r.PathValue("subscriptionId"); sub != "" {
		if _, _, ok := srv.subscription(sub); !ok {
			subscriptionNotFound(w, sub)
			return false
		}
	}
	if v := r.URL.Query().Get("api-version"); v < "2021-06-01" {
		badRequest(w, "The api-version '%s' is not supported for policy definitions; use 2021-06-01 or later.", v)
		return false
	}
	return true
}

func (srv *server) policyDefinitionList(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	if !srv.policyDefinitionRequest(w, r) {
		return
	}
	defs := srv.policyDefinitionsAt(r.PathValue("subscriptionId"))
	page := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(defs), cloudsim.DefaultPageSize)
	out := struct {
		Value    []policyDefinitionJSON `json:"value"`
		NextLink string                 `json:"nextLink,omitempty"`
	}{Value: []policyDefinitionJSON{}, NextLink: page.NextLink}
	for _, d := range defs[page.Start:page.End] {
		out.Value = append(out.Value, policyDefinitionRecord(d))
	}
	cloudsim.WriteJSON(w, out)
}

// policyDefinitionGet answers one definition: a built-in one at the root,
// a custom one of the subscription at a subscription.
func (srv *server) policyDefinitionGet(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	if !srv.policyDefinitionRequest(w, r) {
		return
	}
	sub, name := r.PathValue("subscriptionId"), r.PathValue("policyDefinitionName")
	for _, d := range srv.policyDefinitionsAt(sub) {
		if strings.EqualFold(lastSegment(d.ID), name) && strings.EqualFold(definitionScope(d.ID), sub) {
			cloudsim.WriteJSON(w, policyDefinitionRecord(d))
			return
		}
	}
	cloudsim.WriteError(w, http.StatusNotFound, "PolicyDefinitionNotFound", fmt.Sprintf("The policy definition '%s' could not be found.", name))
}
