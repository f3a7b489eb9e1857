package idp

import (
	"net/http"
	"net/url"
)

// handleAdminConsent answers Entra ID's admin consent endpoint
// (/{tenant}/adminconsent?client_id=…&redirect_uri=…&state=…): a directory's
// administrator grants a multi-tenant application the permissions it
// asks for, in that directory, and the browser goes back to the
// application with admin_consent=True and the directory as tenant, or with
// error and error_description.
//
// The simulator has no passwords: without login_hint the consent is
// granted at once on behalf of the directory's administrator. With
// login_hint, the user must be an enabled privileged user of the directory
// (world.User.IsPrivileged); anyone else is refused with Entra ID's
// AADSTS90094, as a user who may not consent for the organisation is. The
// multi-tenant segments (organizations, common) consent in the directory
// of the user login_hint names, and need one. A granted consent is kept
// at run time (cloudsim.Sim.SetConsent): the directory then issues the
// application tokens, and its Resource Manager and Graph answer them.
func (p *Provider) handleAdminConsent(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t, _, redirect, ok := p.browserClient(w, r)
	if !ok {
		return
	}
	state := q.Get("state")
	hint := q.Get("login_hint")
	dir := t.id
	switch {
	case hint != "":
		u, oe := p.signInUser(hint, "", t, "access_denied")
		if oe != nil {
			redirectError(w, r, redirect, oe, state)
			return
		}
		if !u.IsPrivileged {
			redirectError(w, r, redirect, newError(http.StatusForbidden, "access_denied", 90094,
				"The grant requires admin permission. User %s may not consent for the organisation.", u.Email), state)
			return
		}
		dir = u.DirectoryTenantID
	case t.any:
		errorPage(w, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. Admin consent at '%s' needs login_hint to name the consenting administrator, or a directory tenant in the path.", t.id))
		return
	}
	p.sim.SetConsent(dir, true)
	redirectWith(w, r, redirect, url.Values{"admin_consent": {"True"}, "tenant": {dir}}, state)
}
