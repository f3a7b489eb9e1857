package graph

import (
	"net/http"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Access reviews: each of the world's reviews is a schedule definition
// with one instance, which holds the review's decisions.

func (srv *server) registerAccessReviews(v string) {
	base := "GET /" + v + "/identityGovernance/accessReviews/definitions"
	srv.handle(base, listDefinitions)
	srv.handle(base+"/{id}/instances", listInstances)
	srv.handle(base+"/{id}/instances/{iid}/decisions", listDecisions)
}

// identityJSON is a userIdentity: who a decision is about, or who made it.
type identityJSON struct {
	ODataType         string `json:"@odata.type,omitempty"`
	ID                string `json:"id"`
	DisplayName       string `json:"displayName"`
	UserPrincipalName string `json:"userPrincipalName"`
}

// nobody is the identity Graph names as the reviewer of an item no one
// has reviewed.
var nobody = identityJSON{ID: "00000000-0000-0000-0000-000000000000"}

type scopeJSON struct {
	ODataType string `json:"@odata.type"`
	Query     string `json:"query"`
	QueryType string `json:"queryType"`
}

type definitionJSON struct {
	ID                   string       `json:"id"`
	DisplayName          string       `json:"displayName"`
	Status               string       `json:"status"`
	CreatedDateTime      string       `json:"createdDateTime"`
	LastModifiedDateTime string       `json:"lastModifiedDateTime"`
	DescriptionForAdmins string       `json:"descriptionForAdmins"`
	CreatedBy            identityJSON `json:"createdBy"`
	Scope                scopeJSON    `json:"scope"`
	Reviewers            []any        `json:"reviewers"`
}

type instanceJSON struct {
	ID            string    `json:"id"`
	StartDateTime string    `json:"startDateTime"`
	EndDateTime   string    `json:"endDateTime"`
	Status        string    `json:"status"`
	Scope         scopeJSON `json:"scope"`
}

type decisionJSON struct {
	ID               string       `json:"id"`
	AccessReviewID   string       `json:"accessReviewId"`
	Decision         string       `json:"decision"`
	Recommendation   string       `json:"recommendation"`
	Justification    string       `json:"justification"`
	ApplyResult      string       `json:"applyResult"`
	AppliedDateTime  *string      `json:"appliedDateTime"`
	ReviewedDateTime *string      `json:"reviewedDateTime"`
	ReviewedBy       identityJSON `json:"reviewedBy"`
	Principal        identityJSON `json:"principal"`
	PrincipalLink    string       `json:"principalLink"`
}

// usersScope is what a review covers; the world does not say, so every
// review covers the directory's users.
var usersScope = scopeJSON{ODataType: "#microsoft.graph.accessReviewQueryScope", Query: "/users", QueryType: "MicrosoftGraph"}

// reviewWindow places a review's one instance: the fortnight up to its
// end date when the world gives one; otherwise relative to today by its
// status: two weeks that ended a month ago for a finished review, the
// current fortnight for one in progress, and a fortnight from next week for
// one that has not started.
func reviewWindow(r world.AccessReview, today time.Time) (start, end time.Time) {
	if last, err := time.Parse(world.DateLayout, r.EndDate); err == nil {
		return last.AddDate(0, 0, -14), last
	}
	switch r.Status {
	case "NotStarted", "Initializing":
		start = today.AddDate(0, 0, 7)
	case "InProgress", "Starting":
		start = today.AddDate(0, 0, -7)
	default:
		start = today.AddDate(0, 0, -45)
	}
	return start, start.AddDate(0, 0, 14)
}

func instanceID(r world.AccessReview) string { return derivedID("review-instance", r.ID) }

// reviews are the world's access reviews of the call's tenant.
func (c *call) reviews() []world.AccessReview {
	var out []world.AccessReview
	for _, r := range c.world.AccessReviews {
		if strings.EqualFold(r.DirectoryTenantID, c.tenant.DirectoryTenantID) {
			out = append(out, r)
		}
	}
	return out
}

// review finds the tenant's review a request's {id} names; Graph answers
// 404 NotFound for another tenant's.
func (c *call) review() (world.AccessReview, bool) {
	id := c.r.PathValue("id")
	for _, r := range c.reviews() {
		if strings.EqualFold(r.ID, id) {
			return r, true
		}
	}
	c.error(http.StatusNotFound, "NotFound", "The requested access review definition '"+id+"' was not found.")
	return world.AccessReview{}, false
}

// reviewer is who decides a tenant's reviews: its first enabled privileged
// user, or nobody in a tenant without one.
func (c *call) reviewer() identityJSON {
	for _, u := range c.users() {
		if u.IsPrivileged && (u.AccountEnabled == nil || *u.AccountEnabled) {
			return identityJSON{ID: idp.ObjectID(u), DisplayName: u.Name, UserPrincipalName: userPrincipalName(c.tenant, u)}
		}
	}
	return nobody
}

func listDefinitions(c *call) {
	var out []definitionJSON
	creator := c.reviewer()
	for _, r := range c.reviews() {
		start, _ := reviewWindow(r, c.today())
		created := stamp(start.AddDate(0, 0, -7))
		out = append(out, definitionJSON{ID: r.ID, DisplayName: r.Name, Status: r.Status, CreatedDateTime: created, LastModifiedDateTime: created,
			CreatedBy: creator, Scope: usersScope, Reviewers: []any{}})
	}
	listOf(c, "identityGovernance/accessReviews/definitions", out, nil)
}

func listInstances(c *call) {
	r, ok := c.review()
	if !ok {
		return
	}
	start, end := reviewWindow(r, c.today())
	out := []instanceJSON{{ID: instanceID(r), StartDateTime: stamp(start), EndDateTime: stamp(end), Status: r.Status, Scope: usersScope}}
	listOf(c, "identityGovernance/accessReviews/definitions('"+r.ID+"')/instances", out, nil)
}

// listDecisions lists an instance's decisions. A decision was made a day
// into the review and a minute after the one before; one not reviewed has
// no time and nobody as its reviewer. The recommendation is Graph's
// inactivity rule: deny who has not signed in during the 30 days before the
// review started.
func listDecisions(c *call) {
	r, ok := c.review()
	if !ok {
		return
	}
	if iid := c.r.PathValue("iid"); !strings.EqualFold(iid, instanceID(r)) {
		c.error(http.StatusNotFound, "NotFound", "The requested access review instance '"+iid+"' was not found.")
		return
	}
	start, _ := reviewWindow(r, c.today())
	reviewer := c.reviewer()
	users := c.users()
	out := make([]decisionJSON, len(r.Decisions))
	for i, d := range r.Decisions {
		principal := identityJSON{ODataType: "#microsoft.graph.userIdentity", ID: derivedID("principal", d.User), DisplayName: d.User, UserPrincipalName: d.User}
		recommendation := "NotAvailable"
		if u, ok := users.ByEmail(d.User); ok {
			principal.ID, principal.DisplayName, principal.UserPrincipalName = idp.ObjectID(u), u.Name, userPrincipalName(c.tenant, u)
			recommendation = "Deny"
			if at, ok := lastSignIn(u); ok && !at.Before(start.AddDate(0, 0, -30)) {
				recommendation = "Approve"
			}
		}
		out[i] = decisionJSON{
			ID: derivedID("decision", instanceID(r), d.User), AccessReviewID: instanceID(r), Decision: d.Decision,
			Recommendation: recommendation, ApplyResult: "New", ReviewedBy: nobody, Principal: principal,
			PrincipalLink: c.srv.sim.URLs[cloudsim.Graph] + "/v1.0/users/" + principal.ID,
		}
		if d.Decision != "NotReviewed" {
			at := stamp(start.Add(24*time.Hour + time.Duration(i)*time.Minute))
			out[i].ReviewedDateTime, out[i].ReviewedBy = &at, reviewer
		}
	}
	listOf(c, "identityGovernance/accessReviews/definitions('"+r.ID+"')/instances('"+instanceID(r)+"')/decisions", out, nil)
}
