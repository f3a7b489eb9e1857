package graph

import (
	"time"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Identity Protection's risky users: the directory's users the world
// gives a risk level.

func (srv *server) registerRisk(v string) {
	srv.handle("GET /"+v+"/identityProtection/riskyUsers", listRiskyUsers)
}

type riskyUserJSON struct {
	ID                      string `json:"id"`
	IsDeleted               bool   `json:"isDeleted"`
	IsProcessing            bool   `json:"isProcessing"`
	RiskLastUpdatedDateTime string `json:"riskLastUpdatedDateTime"`
	RiskLevel               string `json:"riskLevel"`
	RiskState               string `json:"riskState"`
	RiskDetail              string `json:"riskDetail"`
	UserDisplayName         string `json:"userDisplayName"`
	UserPrincipalName       string `json:"userPrincipalName"`
}

// riskDetails is the reason Graph gives for each state the world names.
var riskDetails = map[string]string{
	"atRisk":               "none",
	"confirmedCompromised": "adminConfirmedUserCompromised",
	"remediated":           "userPerformedSecuredPasswordChange",
	"dismissed":            "adminDismissedAllRiskForUser",
	"confirmedSafe":        "adminConfirmedUserSafe",
}

// riskUpdated is when the user's risk last changed: its last sign-in at
// 08:00 UTC, or today's for a user that never signed in.
func (c *call) riskUpdated(u world.User) string {
	if d, err := time.Parse(world.DateLayout, u.LastSignIn); err == nil {
		return stamp(d.Add(8 * time.Hour))
	}
	return stamp(c.today().Add(8 * time.Hour))
}

func listRiskyUsers(c *call) {
	out := []riskyUserJSON{}
	for _, u := range c.users() {
		if u.RiskLevel == "" {
			continue
		}
		out = append(out, riskyUserJSON{ID: idp.ObjectID(u), RiskLastUpdatedDateTime: c.riskUpdated(u), RiskLevel: u.RiskLevel,
			RiskState: u.RiskState, RiskDetail: riskDetails[u.RiskState], UserDisplayName: u.Name, UserPrincipalName: userPrincipalName(c.tenant, u)})
	}
	listOf(c, "identityProtection/riskyUsers", out, func(r riskyUserJSON) map[string]any {
		return map[string]any{"riskLevel": r.RiskLevel, "riskState": r.RiskState, "userPrincipalName": r.UserPrincipalName}
	})
}
