package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// ErrNoClientID is an admin consent URL asked of clients without an
// application (client) id: a system-assigned managed identity, which no
// other directory can consent to.
var ErrNoClientID = errors.New("cloud: Steward's application has no client id configured, so no directory can consent to it")

// AdminConsentURL is where an administrator of a directory grants Steward's
// application admin consent in it: Entra ID's admin consent endpoint on the
// configured authority (the simulated identity provider serves it too),
// which sends the browser back to redirectURI with admin_consent=True and
// the directory as tenant, or with error and error_description. The
// redirect URI must be registered on the application.
func (c *Clients) AdminConsentURL(directoryTenantID, redirectURI string) (string, error) {
	if c.creds.cfg.ClientID == "" {
		return "", ErrNoClientID
	}
	q := url.Values{"client_id": {c.creds.cfg.ClientID}, "redirect_uri": {redirectURI}}
	return c.endpoints.Authority + url.PathEscape(strings.ToLower(directoryTenantID)) + "/adminconsent?" + q.Encode(), nil
}

// CheckGraph reads Microsoft Graph in a directory with the application's
// token there: one user, which needs the application's admin consent in
// the directory and its User.Read.All permission. Lighthouse delegation
// does not reach Entra ID, so a delegated tenant's directory needs the
// consent as well. A refusal (a token the directory will not issue,
// told by the identity provider's own words, or Graph's 403) matches
// ErrNoAccess.
func (c *Clients) CheckGraph(ctx context.Context, directoryTenantID string) error {
	g := c.Graph(directoryTenantID)
	if g.err != nil {
		return g.err
	}
	var page graphPage[struct {
		ID string `json:"id"`
	}]
	err := g.get(ctx, g.endpoint+"/v1.0/users?$top=1&$select=id", &page)
	var authErr *azidentity.AuthenticationFailedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &authErr):
		return fmt.Errorf("%w: %w", ErrNoAccess, &tokenRefused{directory: directoryTenantID, err: authErr})
	}
	err = wrap(g.op("read users"), err)
	if errors.Is(err, ErrForbidden) {
		return fmt.Errorf("%w: %w", ErrNoAccess, err)
	}
	return err
}
