package checks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/sdk"
)

// The datasets the checks read, and the plugins that publish them.
const (
	IdentityDataset   = "identity_mfa"
	ComplianceDataset = "compliance"
	FrameworksDataset = "compliance_frameworks"
)

// datasetOf is the dataset a metric is read from.
func datasetOf(m catalogue.Metric) string {
	switch m {
	case catalogue.ComplianceScore:
		return ComplianceDataset
	case catalogue.FrameworkCoverage:
		return FrameworksDataset
	}
	return IdentityDataset
}

// Datasets reads the datasets other plugins publish; *sdk.Host does.
type Datasets interface {
	ReadDataset(ctx context.Context, name string, tenantIDs []string, params map[string]string, fn func(json.RawMessage) error) error
}

// The fields of the records the checks read; a record carries more.
type identityRecord struct {
	TenantID         string   `json:"tenant_id"`
	MFACoverage      *float64 `json:"mfa_coverage_percentage"`
	AdminMFA         *float64 `json:"admin_mfa_percentage"`
	DeviceCompliance *float64 `json:"device_compliance_percentage"`
}

type complianceRecord struct {
	TenantID string   `json:"tenant_id"`
	Percent  *float64 `json:"overall_compliance_percent"`
}

type frameworkRecord struct {
	TenantID    string  `json:"tenant_id"`
	FrameworkID string  `json:"framework_id"`
	Coverage    float64 `json:"coverage_percent"`
}

// Figures are the metrics a run read for its tenants, each dataset read
// once for all of them.
type Figures struct {
	identity   map[string]identityRecord
	compliance map[string]complianceRecord
	frameworks map[string]map[string]frameworkRecord
	// unavailable holds, per dataset no plugin serves, the reason.
	unavailable map[string]string
}

// ReadFigures reads, for the tenants, the datasets the catalogue's checks
// need. A dataset no plugin publishes, or whose plugin is down, is
// recorded as unavailable, which makes its checks unknown; any other
// failure to read is returned.
func ReadFigures(ctx context.Context, ds Datasets, c *catalogue.Catalogue, tenantIDs []string) (*Figures, error) {
	f := &Figures{identity: map[string]identityRecord{}, compliance: map[string]complianceRecord{},
		frameworks: map[string]map[string]frameworkRecord{}, unavailable: map[string]string{}}
	needed := map[string]bool{}
	for _, r := range c.Requirements {
		if r.Check != nil {
			needed[datasetOf(r.Check.Metric)] = true
		}
	}
	if len(tenantIDs) == 0 {
		return f, nil
	}
	for _, name := range []string{IdentityDataset, ComplianceDataset, FrameworksDataset} {
		if !needed[name] {
			continue
		}
		err := ds.ReadDataset(ctx, name, tenantIDs, nil, func(raw json.RawMessage) error { return f.add(name, raw) })
		if errors.Is(err, sdk.ErrDatasetUnavailable) {
			f.unavailable[name] = err.Error()
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return f, nil
}

func (f *Figures) add(dataset string, raw json.RawMessage) error {
	var err error
	switch dataset {
	case IdentityDataset:
		var r identityRecord
		if err = json.Unmarshal(raw, &r); err == nil {
			f.identity[r.TenantID] = r
		}
	case ComplianceDataset:
		var r complianceRecord
		if err = json.Unmarshal(raw, &r); err == nil {
			f.compliance[r.TenantID] = r
		}
	case FrameworksDataset:
		var r frameworkRecord
		if err = json.Unmarshal(raw, &r); err == nil {
			if f.frameworks[r.TenantID] == nil {
				f.frameworks[r.TenantID] = map[string]frameworkRecord{}
			}
			f.frameworks[r.TenantID][r.FrameworkID] = r
		}
	}
	if err != nil {
		return fmt.Errorf("%s: a record does not decode: %w", dataset, err)
	}
	return nil
}

// Reader reads a check's metric for the tenant from the figures.
func (f *Figures) Reader(tenantID string) func(catalogue.Check) Reading {
	return func(c catalogue.Check) Reading {
		name := datasetOf(c.Metric)
		if reason, ok := f.unavailable[name]; ok {
			return Reading{Reason: reason}
		}
		notSynced := Reading{Reason: fmt.Sprintf("%s has no record of the tenant: its plugin has not synced it yet", name)}
		noValue := func(why string) Reading {
			return Reading{Reason: fmt.Sprintf("%s has no %s for the tenant: %s", name, c.Metric, why)}
		}
		switch c.Metric {
		case catalogue.MFACoverage, catalogue.AdminMFA, catalogue.DeviceCompliance:
			r, ok := f.identity[tenantID]
			if !ok {
				return notSynced
			}
			v, why := r.MFACoverage, "the directory has no accounts"
			if c.Metric == catalogue.AdminMFA {
				v, why = r.AdminMFA, "no account holds a directory role"
			} else if c.Metric == catalogue.DeviceCompliance {
				v, why = r.DeviceCompliance, "no device is managed"
			}
			if v == nil {
				return noValue(why)
			}
			return Reading{Value: v}
		case catalogue.ComplianceScore:
			r, ok := f.compliance[tenantID]
			if !ok {
				return notSynced
			}
			if r.Percent == nil {
				return noValue("no resource was evaluated compliant or non-compliant")
			}
			return Reading{Value: r.Percent}
		default:
			fws, ok := f.frameworks[tenantID]
			if !ok {
				return notSynced
			}
			r, ok := fws[c.Framework]
			if !ok {
				return Reading{Reason: fmt.Sprintf("%s has no framework %q: the compliance plugin does not load it", name, c.Framework)}
			}
			return Reading{Value: &r.Coverage}
		}
	}
}
