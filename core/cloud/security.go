package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/security/armsecurity"
)

// ErrSecurityReaderRequired is a 403 from Defender for Cloud: the
// principal lacks the Security Reader role (or a role that includes it) on
// the subscription. It also matches ErrForbidden.
var ErrSecurityReaderRequired = errors.New("security reader role required")

// assessmentsAPIVersion is the Microsoft.Security API version assessments
// are listed with: the SDK's assessments list sends none of $expand, and
// without $expand=metadata an assessment carries neither its severity nor
// its policy definition.
const assessmentsAPIVersion = "2021-06-01"

// SecurityAssessment is Defender for Cloud's assessment of one resource
// under one recommendation, with the recommendation's metadata.
type SecurityAssessment struct {
	// ID is the assessment's own id: the resource's id, then
	// /providers/Microsoft.Security/assessments/{Name}.
	ID string
	// Name is the assessment's key, a GUID naming the recommendation.
	Name       string
	ResourceID string
	// DisplayName is the recommendation's.
	DisplayName string
	// Status is Healthy, Unhealthy or NotApplicable.
	Status string
	// Severity is High, Medium or Low; empty when the metadata names none.
	Severity string
	// PolicyDefinitionID is the policy definition the recommendation is
	// built on; empty for recommendations of no policy.
	PolicyDefinitionID     string
	RemediationDescription string
	Categories             []string
	// AssessmentType is BuiltIn, CustomPolicy, CustomerManaged or
	// VerifiedPartner.
	AssessmentType string
}

// SecureScore is a subscription's secure score.
type SecureScore struct {
	Current float64
	Max     int
	// Percentage is Current of Max as a fraction (0 to 1), as Azure
	// sends it.
	Percentage float64
}

// SecureScoreControl is one security control's part of a subscription's
// secure score.
type SecureScoreControl struct {
	// Name is the control's key, a GUID.
	Name        string
	DisplayName string
	Current     float64
	Max         int
	Percentage  float64
	// HealthyResources, UnhealthyResources and NotApplicableResources
	// count the resources the control's assessments found in each status.
	HealthyResources       int
	UnhealthyResources     int
	NotApplicableResources int
}

// securityFailure wraps a failed Defender for Cloud request as op's error;
// a 403 also matches ErrSecurityReaderRequired and names the role.
func securityFailure(op, subscriptionID string) func(error) error {
	return func(err error) error {
		err = wrap(op, err)
		if e, ok := err.(*Error); ok && e.StatusCode == http.StatusForbidden {
			e.kinds = append(e.kinds, ErrSecurityReaderRequired)
			return fmt.Errorf("%w: grant Steward the Security Reader role on subscription %s", e, subscriptionID)
		}
		return err
	}
}

// SecurityAssessments calls fn for each Defender for Cloud assessment of
// the resources of a subscription, with its metadata. The SDK's list
// cannot ask for the metadata, so the list is read at
// assessmentsAPIVersion with $expand=metadata through the Resource Manager
// pipeline, following nextLink, into the SDK's models. A principal without
// the Security Reader role gets an error matching
// ErrSecurityReaderRequired. An error from fn stops the listing and is
// returned as is.
func (c *ResourceManager) SecurityAssessments(ctx context.Context, subscriptionID string, fn func(SecurityAssessment) error) error {
	op := "list security assessments of subscription " + subscriptionID
	fail := securityFailure(op, subscriptionID)
	next := runtime.JoinPaths(c.raw.Endpoint(), "/subscriptions/"+subscriptionID+"/providers/Microsoft.Security/assessments")
	first := true
	for next != "" {
		page, err := c.assessmentPage(ctx, next, first)
		if err != nil {
			return fail(err)
		}
		first = false
		for _, a := range page.Value {
			if a == nil || a.Properties == nil {
				continue
			}
			if err := fn(securityAssessmentOf(a)); err != nil {
				return err
			}
		}
		next = deref(page.NextLink)
	}
	return nil
}

// assessmentPage reads one page of the assessments list at url; the first
// page's request names the API version and the expansion, a nextLink
// carries them.
func (c *ResourceManager) assessmentPage(ctx context.Context, url string, first bool) (*armsecurity.AssessmentList, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, url)
	if err != nil {
		return nil, err
	}
	if first {
		q := req.Raw().URL.Query()
		q.Set("api-version", assessmentsAPIVersion)
		q.Set("$expand", string(armsecurity.ExpandEnumMetadata))
		req.Raw().URL.RawQuery = q.Encode()
	}
	req.Raw().Header["Accept"] = []string{"application/json"}
	resp, err := c.raw.Pipeline().Do(req)
	if err != nil {
		return nil, err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return nil, runtime.NewResponseError(resp)
	}
	var page armsecurity.AssessmentList
	if err := runtime.UnmarshalAsJSON(resp, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

func securityAssessmentOf(a *armsecurity.AssessmentResponse) SecurityAssessment {
	p := a.Properties
	out := SecurityAssessment{ID: deref(a.ID), Name: deref(a.Name), DisplayName: deref(p.DisplayName)}
	if d, ok := p.ResourceDetails.(*armsecurity.AzureResourceDetails); ok {
		out.ResourceID = deref(d.ID)
	}
	if p.Status != nil {
		out.Status = string(deref(p.Status.Code))
	}
	if m := p.Metadata; m != nil {
		if out.DisplayName == "" {
			out.DisplayName = deref(m.DisplayName)
		}
		out.Severity = string(deref(m.Severity))
		out.PolicyDefinitionID = deref(m.PolicyDefinitionID)
		out.RemediationDescription = deref(m.RemediationDescription)
		out.AssessmentType = string(deref(m.AssessmentType))
		for _, cat := range m.Categories {
			if cat != nil {
				out.Categories = append(out.Categories, string(*cat))
			}
		}
	}
	return out
}

// SecureScore reads a subscription's secure score (Azure's ascScore) and
// its security controls. A principal without the Security Reader role
// gets an error matching ErrSecurityReaderRequired.
func (c *ResourceManager) SecureScore(ctx context.Context, subscriptionID string) (SecureScore, []SecureScoreControl, error) {
	scores, err := armsecurity.NewSecureScoresClient(subscriptionID, c.cred, c.armOpts)
	if err != nil {
		return SecureScore{}, nil, err
	}
	resp, err := scores.Get(ctx, "ascScore", nil)
	if err != nil {
		return SecureScore{}, nil, securityFailure("read secure score of subscription "+subscriptionID, subscriptionID)(err)
	}
	var score SecureScore
	if p := resp.Properties; p != nil && p.Score != nil {
		score = SecureScore{Current: deref(p.Score.Current), Max: int(deref(p.Score.Max)), Percentage: deref(p.Score.Percentage)}
	}
	controlsClient, err := armsecurity.NewSecureScoreControlsClient(subscriptionID, c.cred, c.armOpts)
	if err != nil {
		return SecureScore{}, nil, err
	}
	var controls []SecureScoreControl
	fail := securityFailure("list secure score controls of subscription "+subscriptionID, subscriptionID)
	pager := controlsClient.NewListPager(&armsecurity.SecureScoreControlsClientListOptions{Expand: to.Ptr(armsecurity.ExpandControlsEnumDefinition)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return SecureScore{}, nil, fail(err)
		}
		for _, v := range page.Value {
			if v == nil || v.Properties == nil {
				continue
			}
			p := v.Properties
			ctl := SecureScoreControl{Name: deref(v.Name), DisplayName: deref(p.DisplayName),
				HealthyResources: int(deref(p.HealthyResourceCount)), UnhealthyResources: int(deref(p.UnhealthyResourceCount)),
				NotApplicableResources: int(deref(p.NotApplicableResourceCount))}
			if p.Score != nil {
				ctl.Current, ctl.Max, ctl.Percentage = deref(p.Score.Current), int(deref(p.Score.Max)), deref(p.Score.Percentage)
			}
			controls = append(controls, ctl)
		}
	}
	return score, controls, nil
}
