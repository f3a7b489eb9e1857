package graph

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Users and the authentication methods registration report.

func (srv *server) registerUsers(v string) {
	srv.handle("GET /"+v+"/users", listUsers)
	srv.handle("GET /"+v+"/reports/authenticationMethods/userRegistrationDetails", listRegistrationDetails)
}

// userJSON is a user as Graph returns it: the default properties and the
// ones Steward selects. signInActivity is always present, as if selected;
// Graph leaves it out unless asked for, and the extra field costs clients
// nothing.
type userJSON struct {
	ID                string          `json:"id"`
	BusinessPhones    []string        `json:"businessPhones"`
	DisplayName       string          `json:"displayName"`
	GivenName         *string         `json:"givenName"`
	Surname           *string         `json:"surname"`
	Mail              string          `json:"mail"`
	UserPrincipalName string          `json:"userPrincipalName"`
	UserType          string          `json:"userType"`
	AccountEnabled    bool            `json:"accountEnabled"`
	CreatedDateTime   string          `json:"createdDateTime"`
	SignInActivity    *signInActivity `json:"signInActivity"`
}

type signInActivity struct {
	LastSignInDateTime           string `json:"lastSignInDateTime"`
	LastSignInRequestID          string `json:"lastSignInRequestId"`
	LastSuccessfulSignInDateTime string `json:"lastSuccessfulSignInDateTime"`
}

func listUsers(c *call) {
	users := c.users()
	list(c, "users", len(users), func(i int) userJSON { return c.userOf(users[i]) }, func(u userJSON) map[string]any {
		return map[string]any{
			"userType": u.UserType, "accountEnabled": u.AccountEnabled,
			"mail": u.Mail, "userPrincipalName": u.UserPrincipalName, "displayName": u.DisplayName,
		}
	})
}

func (c *call) userOf(u world.User) userJSON {
	out := userJSON{
		ID:                idp.ObjectID(u),
		BusinessPhones:    []string{},
		DisplayName:       u.Name,
		Mail:              u.Email,
		UserPrincipalName: userPrincipalName(c.tenant, u),
		UserType:          userType(u),
		AccountEnabled:    u.AccountEnabled == nil || *u.AccountEnabled,
		CreatedDateTime:   stamp(CreatedDateTime(u, c.today())),
	}
	if first, last, ok := strings.Cut(u.Name, " "); ok {
		out.GivenName, out.Surname = &first, &last
	}
	if at, ok := lastSignIn(u); ok {
		out.SignInActivity = &signInActivity{
			LastSignInDateTime:           stamp(at),
			LastSignInRequestID:          derivedID("sign-in", idp.ObjectID(u), u.LastSignIn),
			LastSuccessfulSignInDateTime: stamp(at),
		}
	}
	return out
}

// userType is Member unless the world says Guest.
func userType(u world.User) string {
	if u.UserType == "" {
		return "Member"
	}
	return u.UserType
}

// userPrincipalName is a user's sign-in name in its tenant. A member signs
// in with its e-mail address. A guest's is Entra ID's external form, its
// address with @ made _ followed by #EXT#@ and the inviting tenant's
// default domain (its first), so clients must read a guest's address from
// mail, as on Entra ID.
func userPrincipalName(t world.Tenant, u world.User) string {
	if userType(u) != "Guest" {
		return u.Email
	}
	domain := strings.ToLower(strings.ReplaceAll(t.Name, " ", "")) + ".onmicrosoft.com"
	if len(t.Domains) > 0 {
		domain = t.Domains[0]
	}
	return strings.ReplaceAll(u.Email, "@", "_") + "#EXT#@" + domain
}

// lastSignIn is the world's last sign-in day, at midnight UTC.
func lastSignIn(u world.User) (time.Time, bool) {
	t, err := time.Parse(time.DateOnly, u.LastSignIn)
	return t, err == nil
}

// CreatedDateTime is when a user was created: 30 to 729 days, drawn from
// its object id, before its last sign-in, or before today for a user who
// never signed in, so a user is always older than its activity.
func CreatedDateTime(u world.User, today time.Time) time.Time {
	anchor, ok := lastSignIn(u)
	if !ok {
		anchor = today.UTC().Truncate(24 * time.Hour)
	}
	return createdBefore(u, anchor)
}

func createdBefore(u world.User, anchor time.Time) time.Time {
	return anchor.AddDate(0, 0, -30-int(draw(idp.ObjectID(u), "created")%700))
}

// draw is a number derived from an object id and a purpose, so derived
// properties are stable across runs and independent of one another.
func draw(id, purpose string) uint64 {
	sum := sha256.Sum256([]byte(id + "\x00" + purpose))
	return binary.BigEndian.Uint64(sum[:8])
}

// registrationJSON is a userRegistrationDetails record.
type registrationJSON struct {
	ID                    string   `json:"id"`
	UserPrincipalName     string   `json:"userPrincipalName"`
	UserDisplayName       string   `json:"userDisplayName"`
	UserType              string   `json:"userType"`
	IsAdmin               bool     `json:"isAdmin"`
	IsSsprRegistered      bool     `json:"isSsprRegistered"`
	IsSsprEnabled         bool     `json:"isSsprEnabled"`
	IsSsprCapable         bool     `json:"isSsprCapable"`
	IsMfaRegistered       bool     `json:"isMfaRegistered"`
	IsMfaCapable          bool     `json:"isMfaCapable"`
	IsPasswordlessCapable bool     `json:"isPasswordlessCapable"`
	MethodsRegistered     []string `json:"methodsRegistered"`
	DefaultMfaMethod      string   `json:"defaultMfaMethod"`
	LastUpdatedDateTime   string   `json:"lastUpdatedDateTime"`
}

// graphMethods names the world's MFA methods as the registration report
// does; other names pass through unchanged.
var graphMethods = map[string]string{
	"microsoftAuthenticator": "microsoftAuthenticatorPush",
	"phoneAuthentication":    "mobilePhone",
}

// defaultMethods are the methods the report's defaultMfaMethod can name,
// in the order a user's first registered one becomes the default.
var defaultMethods = []string{"microsoftAuthenticatorPush", "softwareOneTimePasscode", "mobilePhone", "alternateMobilePhone", "officePhone"}

// passwordless are the methods that sign in without a password.
var passwordless = []string{"fido2", "windowsHelloForBusiness", "microsoftAuthenticatorPasswordless", "passKeyDeviceBound", "passKeyDeviceBoundAuthenticator"}

func listRegistrationDetails(c *call) {
	users := c.users()
	list(c, "reports/authenticationMethods/userRegistrationDetails", len(users), func(i int) registrationJSON { return c.registrationOf(users[i]) },
		func(r registrationJSON) map[string]any {
			return map[string]any{
				"userType": r.UserType, "isAdmin": r.IsAdmin, "isMfaRegistered": r.IsMfaRegistered, "isMfaCapable": r.IsMfaCapable,
				"isPasswordlessCapable": r.IsPasswordlessCapable, "isSsprRegistered": r.IsSsprRegistered, "userPrincipalName": r.UserPrincipalName,
			}
		})
}

// registrationOf reports a user's MFA posture from the world: its
// registered methods, and administrators as the world's privileged users
// (the members of the directory roles). Registration for MFA also serves
// self-service password reset, which Entra ID offers members only.
func (c *call) registrationOf(u world.User) registrationJSON {
	methods := make([]string, 0, len(u.MFAMethods))
	for _, m := range u.MFAMethods {
		if g, ok := graphMethods[m]; ok {
			m = g
		}
		methods = append(methods, m)
	}
	def := "none"
	for _, m := range methods {
		if slices.Contains(defaultMethods, m) {
			def = m
			break
		}
	}
	member := userType(u) == "Member"
	updated, ok := lastSignIn(u)
	if !ok {
		updated = CreatedDateTime(u, c.today())
	}
	return registrationJSON{
		ID:                    idp.ObjectID(u),
		UserPrincipalName:     userPrincipalName(c.tenant, u),
		UserDisplayName:       u.Name,
		UserType:              strings.ToLower(userType(u)),
		IsAdmin:               u.IsPrivileged,
		IsSsprRegistered:      u.MFARegistered,
		IsSsprEnabled:         member,
		IsSsprCapable:         member && u.MFARegistered,
		IsMfaRegistered:       u.MFARegistered,
		IsMfaCapable:          u.MFARegistered,
		IsPasswordlessCapable: slices.ContainsFunc(methods, func(m string) bool { return slices.Contains(passwordless, m) }),
		MethodsRegistered:     methods,
		DefaultMfaMethod:      def,
		LastUpdatedDateTime:   stamp(updated),
	}
}
