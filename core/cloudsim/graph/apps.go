package graph

import (
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Application registrations and service principals with their client
// secrets (passwordCredentials) and certificates (keyCredentials).

func (srv *server) registerApps(v string) {
	srv.handle("GET /"+v+"/applications", func(c *call) { listApps(c, false) })
	srv.handle("GET /"+v+"/servicePrincipals", func(c *call) { listApps(c, true) })
}

type passwordCredentialJSON struct {
	CustomKeyIdentifier *string `json:"customKeyIdentifier"`
	DisplayName         string  `json:"displayName"`
	EndDateTime         string  `json:"endDateTime"`
	Hint                string  `json:"hint"`
	KeyID               string  `json:"keyId"`
	SecretText          *string `json:"secretText"`
	StartDateTime       string  `json:"startDateTime"`
}

type keyCredentialJSON struct {
	CustomKeyIdentifier string  `json:"customKeyIdentifier"`
	DisplayName         string  `json:"displayName"`
	EndDateTime         string  `json:"endDateTime"`
	Key                 *string `json:"key"`
	KeyID               string  `json:"keyId"`
	StartDateTime       string  `json:"startDateTime"`
	Type                string  `json:"type"`
	Usage               string  `json:"usage"`
}

// appJSON is an application or a servicePrincipal with the properties
// Steward selects; a service principal also says its type.
type appJSON struct {
	ID                   string                   `json:"id"`
	AppID                string                   `json:"appId"`
	DisplayName          string                   `json:"displayName"`
	ServicePrincipalType string                   `json:"servicePrincipalType,omitempty"`
	PasswordCredentials  []passwordCredentialJSON `json:"passwordCredentials"`
	KeyCredentials       []keyCredentialJSON      `json:"keyCredentials"`
}

// appOf is an application of the world as Graph lists it: a credential
// starts a year before it ends.
func (c *call) appOf(a world.Application) appJSON {
	kind := "application"
	if a.ServicePrincipal {
		kind = "servicePrincipal"
	}
	out := appJSON{ID: derivedID(kind, c.tenant.DirectoryTenantID, a.Name), AppID: derivedID("appId", c.tenant.DirectoryTenantID, a.Name),
		DisplayName: a.Name, PasswordCredentials: []passwordCredentialJSON{}, KeyCredentials: []keyCredentialJSON{}}
	if a.ServicePrincipal {
		out.ServicePrincipalType = "Application"
	}
	for _, cr := range a.Credentials {
		end, _ := time.Parse(world.DateLayout, cr.EndDate)
		keyID := derivedID("credential", out.ID, cr.Type, cr.Name)
		if cr.Type == "password" {
			out.PasswordCredentials = append(out.PasswordCredentials, passwordCredentialJSON{DisplayName: cr.Name, EndDateTime: stamp(end),
				Hint: strings.ToUpper(keyID[:3]), KeyID: keyID, StartDateTime: stamp(end.AddDate(-1, 0, 0))})
			continue
		}
		out.KeyCredentials = append(out.KeyCredentials, keyCredentialJSON{CustomKeyIdentifier: strings.ToUpper(strings.ReplaceAll(keyID, "-", "")),
			DisplayName: "CN=" + cr.Name, EndDateTime: stamp(end), KeyID: keyID, StartDateTime: stamp(end.AddDate(-1, 0, 0)),
			Type: "AsymmetricX509Cert", Usage: "Verify"})
	}
	return out
}

func listApps(c *call, servicePrincipals bool) {
	out := []appJSON{}
	for _, a := range c.world.Applications {
		if a.ServicePrincipal == servicePrincipals && strings.EqualFold(a.DirectoryTenantID, c.tenant.DirectoryTenantID) {
			out = append(out, c.appOf(a))
		}
	}
	path := "applications"
	if servicePrincipals {
		path = "servicePrincipals"
	}
	listOf(c, path, out, func(a appJSON) map[string]any { return map[string]any{"displayName": a.DisplayName, "appId": a.AppID} })
}
