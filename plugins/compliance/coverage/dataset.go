package coverage

import (
	"context"
	"math"

	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read each tenant's framework
// coverage by.
const DatasetName = "compliance_frameworks"

// Record is one record of the compliance_frameworks dataset: a framework's
// coverage by one tenant's policy states at its latest compliance sync.
type Record struct {
	TenantID             string   `json:"tenant_id" doc:"Internal tenant id"`
	FrameworkID          string   `json:"framework_id" doc:"The framework's id, as the framework list gives it (soc2, nist_csf, …)"`
	FrameworkName        string   `json:"framework_name"`
	Date                 string   `json:"date" format:"date" doc:"Day (UTC) of the tenant's latest compliance snapshot"`
	TotalControls        int      `json:"total_controls"`
	CoveredControls      int      `json:"controls_with_coverage" doc:"Controls a policy definition of the tenant maps to"`
	CompliantControls    int      `json:"compliant_controls" doc:"Covered controls that a resource passes and none fails (status covered)"`
	PartialControls      int      `json:"partial_controls" doc:"Controls that some resources fail and others pass"`
	NonCompliantControls int      `json:"non_compliant_controls" doc:"Controls that resources fail and none passes"`
	NotEvaluatedControls int      `json:"not_evaluated_controls" doc:"Covered controls none of whose mapped policies evaluated a resource"`
	CoveragePercent      float64  `json:"coverage_percent" doc:"controls_with_coverage of total_controls, percent to one decimal"`
	CompliancePercent    *float64 `json:"compliance_percent" nullable:"true" doc:"compliant_controls of the compliant, partial and non-compliant controls, percent to one decimal; null when none is"`
}

// Dataset publishes, for each tenant of the request that has synced, one
// record per loaded framework (only the framework the framework_id
// parameter names, when it is given), ordered by tenant and framework.
func (s *Service) Dataset() sdk.Dataset {
	return sdk.DatasetOf(DatasetName, "Each tenant's coverage of each regulatory framework by its policies: controls covered, compliant, partial and non-compliant, in percent.",
		func(ctx context.Context, req sdk.DatasetRequest, emit func(Record) error) error {
			snaps, err := s.Store.LatestSnapshots(ctx, req.TenantIDs)
			if err != nil {
				return err
			}
			only := req.Params["framework_id"]
			for _, sn := range snaps {
				for _, fw := range s.Mapper.Frameworks().All() {
					if only != "" && fw.ID != only {
						continue
					}
					d, err := s.Detail(ctx, fw.ID, []string{sn.TenantID}, mapping.Options{})
					if err != nil {
						return err
					}
					if err := emit(recordOf(sn.TenantID, fw.Name, sn.Day, d)); err != nil {
						return err
					}
				}
			}
			return nil
		})
}

// recordOf counts a framework's controls by status.
func recordOf(tenantID, name, day string, d *mapping.Detail) Record {
	r := Record{TenantID: tenantID, FrameworkID: d.Framework.ID, FrameworkName: name, Date: day, CoveragePercent: d.OverallCoveragePercent}
	for _, c := range d.Categories {
		for _, ctl := range c.Controls {
			r.TotalControls++
			switch ctl.Status {
			case mapping.StatusCovered:
				r.CompliantControls++
			case mapping.StatusPartial:
				r.PartialControls++
			case mapping.StatusNonCompliant:
				r.NonCompliantControls++
			case mapping.StatusNotEvaluated:
				r.NotEvaluatedControls++
			}
			if ctl.Status != mapping.StatusNotCovered {
				r.CoveredControls++
			}
		}
	}
	if evaluated := r.CompliantControls + r.PartialControls + r.NonCompliantControls; evaluated > 0 {
		p := math.Round(1000*float64(r.CompliantControls)/float64(evaluated)) / 10
		r.CompliancePercent = &p
	}
	return r
}
