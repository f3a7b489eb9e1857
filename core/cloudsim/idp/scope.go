package idp

import (
	"net/http"
	"slices"
	"strings"
)

// scope is a parsed scope parameter: OpenID Connect scopes and permissions
// on at most one resource, as an Entra ID access token is for one resource.
type scope struct {
	openID, profile, email, offline bool
	// resource is the resource the permissions are on, without a trailing
	// slash; empty when the scope names none.
	resource string
	perms    []string
}

// parseScope parses a scope parameter. A permission is qualified by its
// resource (https://management.azure.com/user_impersonation,
// api://app/.default) or is a bare Microsoft Graph permission (User.Read).
func parseScope(raw string) (scope, *oauthError) {
	var s scope
	for _, item := range strings.Fields(raw) {
		switch item {
		case "openid":
			s.openID = true
		case "profile":
			s.profile = true
		case "email":
			s.email = true
		case "offline_access":
			s.offline = true
		default:
			resource, perm := GraphResource, item
			if i := strings.LastIndex(item, "/"); i >= 0 {
				// ARM's resource is often written with its trailing slash,
				// giving https://management.azure.com//.default.
				resource, perm = strings.TrimSuffix(item[:i], "/"), item[i+1:]
			}
			if resource == "" || perm == "" {
				return scope{}, newError(http.StatusBadRequest, "invalid_scope", 70011,
					"The provided value for the input parameter 'scope' is not valid. The scope %s is not valid.", item)
			}
			if s.resource != "" && !sameResource(s.resource, resource) {
				return scope{}, newError(http.StatusBadRequest, "invalid_scope", 28000,
					"Provided value for the input parameter scope is not valid because it contains more than one resource. Scope %s is not valid.", raw)
			}
			s.resource = resource
			if !slices.Contains(s.perms, perm) {
				s.perms = append(s.perms, perm)
			}
		}
	}
	return s, nil
}

// delegated is the audience and the scp permissions of a user's access
// token. A scope without a resource gets a Microsoft Graph token, as on
// Entra ID. ".default" stands for the permissions consented to the client;
// the simulator keeps no consent, so it grants the resource's basic
// delegated permission.
func (s scope) delegated() (resource string, perms []string) {
	if s.resource == "" {
		return GraphResource, []string{"User.Read"}
	}
	for _, perm := range s.perms {
		if perm == ".default" {
			perm = "user_impersonation"
			if sameResource(s.resource, GraphResource) {
				perm = "User.Read"
			}
		}
		if !slices.Contains(perms, perm) {
			perms = append(perms, perm)
		}
	}
	return s.resource, perms
}

// granted is the scope a token response reports: the delegated permissions,
// qualified by their resource except Microsoft Graph's, and the OpenID
// Connect scopes asked for.
func (s scope) granted() string {
	resource, perms := s.delegated()
	var out []string
	for _, perm := range perms {
		if !sameResource(resource, GraphResource) {
			perm = resource + "/" + perm
		}
		out = append(out, perm)
	}
	for _, oidc := range []struct {
		asked bool
		name  string
	}{{s.openID, "openid"}, {s.profile, "profile"}, {s.email, "email"}, {s.offline, "offline_access"}} {
		if oidc.asked {
			out = append(out, oidc.name)
		}
	}
	return strings.Join(out, " ")
}
