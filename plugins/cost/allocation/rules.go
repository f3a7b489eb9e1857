// Package allocation allocates a brand's costs to its cost centres by the
// brand's ordered rules, and reports the chargeback by cost centre: each
// cost goes whole to the cost centre of the first rule it matches, or is
// shared between several by an even, proportional or fixed split, to the
// cent; a cost no rule matches is Unallocated.
package allocation

import (
	"fmt"
	"math"
	"strings"

	"github.com/stewardhq/steward/sdk"
)

// The kinds of rule: what a cost is matched by.
const (
	// KindSubscription matches the costs of a subscription.
	KindSubscription = "subscription"
	// KindResourceGroup matches the costs of a resource group of a
	// subscription, its name compared without case.
	KindResourceGroup = "resource_group"
	// KindTag matches the costs of resources with a tag of a value.
	KindTag = "tag"
	// KindCostCentreTag matches the costs of resources with a tag, and
	// gives each to the cost centre the tag's value names.
	KindCostCentreTag = "cost_centre_tag"
)

// The splits of a shared cost between cost centres.
const (
	// SplitEven gives each cost centre an equal part.
	SplitEven = "even"
	// SplitProportional gives each cost centre a part in proportion to the
	// cost allocated to it directly, in the same currency over the range.
	SplitProportional = "proportional"
	// SplitFixed gives each cost centre its fixed percentage.
	SplitFixed = "fixed"
)

// Unallocated is the cost centre of the costs no rule matches. It is
// reserved: no rule may name it.
const Unallocated = "Unallocated"

// MaxRules is how many rules a brand may have.
const MaxRules = 500

// Rule is one allocation rule: what it matches (kind and its fields) and
// where the cost goes (cost_centre, or shared between several).
type Rule struct {
	Kind           string  `json:"kind" enum:"subscription,resource_group,tag,cost_centre_tag" doc:"What the rule matches: a subscription; a resource group of a subscription (compared without case); resources with tag_key set to tag_value; or resources with tag_key set, whose value names the cost centre"`
	SubscriptionID string  `json:"subscription_id,omitempty" maxLength:"200" doc:"The subscription, for kinds subscription and resource_group (compared without case)"`
	ResourceGroup  string  `json:"resource_group,omitempty" maxLength:"200" doc:"The resource group, for kind resource_group (compared without case)"`
	TagKey         string  `json:"tag_key,omitempty" maxLength:"512" doc:"The tag's name, for kinds tag and cost_centre_tag; stored in lower case, as tag names compare without case"`
	TagValue       string  `json:"tag_value,omitempty" maxLength:"256" doc:"The tag's value, for kind tag (compared as written)"`
	CostCentre     string  `json:"cost_centre,omitempty" maxLength:"100" doc:"The cost centre the matched cost goes to; a rule of kind cost_centre_tag has none, any other exactly one of cost_centre and shared"`
	Shared         *Shared `json:"shared,omitempty" doc:"The cost centres the matched cost is shared between, and how"`
}

// Shared is how a rule's cost is split between cost centres.
type Shared struct {
	Split       string  `json:"split" enum:"even,proportional,fixed" doc:"even: equal parts; proportional: in proportion to each cost centre's directly allocated cost of the same currency over the report's range (even when none of them has any); fixed: each cost centre's percent"`
	CostCentres []Share `json:"cost_centres" minItems:"1" maxItems:"100" doc:"The cost centres, each named once"`
}

// Share is a cost centre's part of a shared cost.
type Share struct {
	Name    string   `json:"name" minLength:"1" maxLength:"100"`
	Percent *float64 `json:"percent,omitempty" exclusiveMinimum:"0" maximum:"100" doc:"The cost centre's percentage, with at most two decimals, for split fixed (whose percentages add up to exactly 100); absent for the other splits"`
}

// basisPoints is a percentage with at most two decimals in hundredths of
// a percent, and whether it had no more decimals.
func basisPoints(p float64) (int64, bool) {
	bp := math.Round(p * 100)
	return int64(bp), math.Abs(p*100-bp) < 1e-6
}

// Validate checks rules as a whole and returns every problem found, each
// named body.rules[i].<field>; it lower-cases tag keys and trims names.
// Nothing is valid in part: a caller stores all rules or none.
func Validate(rules []Rule) []sdk.ErrorDetail {
	var errs []sdk.ErrorDetail
	for i := range rules {
		errs = append(errs, validateRule(fmt.Sprintf("body.rules[%d]", i), &rules[i])...)
	}
	return errs
}

// Invalid is the 422 problem of errs, at least one: its detail names the
// first, its errors every one.
func Invalid(errs []sdk.ErrorDetail) *sdk.Problem {
	p := sdk.Invalid(errs[0].Location, "%s", errs[0].Message)
	p.Errors = errs
	return p
}

func validateRule(at string, r *Rule) []sdk.ErrorDetail {
	var errs []sdk.ErrorDetail
	bad := func(field, format string, args ...any) {
		errs = append(errs, sdk.ErrorDetail{Location: at + "." + field, Message: fmt.Sprintf(format, args...)})
	}
	r.SubscriptionID, r.ResourceGroup = strings.TrimSpace(r.SubscriptionID), strings.TrimSpace(r.ResourceGroup)
	r.TagKey, r.CostCentre = strings.ToLower(strings.TrimSpace(r.TagKey)), strings.TrimSpace(r.CostCentre)
	uses := map[string]bool{}
	switch r.Kind {
	case KindSubscription:
		uses["subscription_id"] = true
	case KindResourceGroup:
		uses["subscription_id"], uses["resource_group"] = true, true
	case KindTag:
		uses["tag_key"], uses["tag_value"] = true, true
	case KindCostCentreTag:
		uses["tag_key"] = true
	default:
		bad("kind", "expected one of subscription, resource_group, tag, cost_centre_tag")
		return errs
	}
	for _, f := range []struct{ name, value string }{{"subscription_id", r.SubscriptionID}, {"resource_group", r.ResourceGroup},
		{"tag_key", r.TagKey}, {"tag_value", r.TagValue}} {
		switch {
		case uses[f.name] && f.value == "":
			bad(f.name, "is required by kind %s", r.Kind)
		case !uses[f.name] && f.value != "":
			bad(f.name, "is not used by kind %s", r.Kind)
		}
	}
	if r.Kind == KindCostCentreTag {
		if r.CostCentre != "" {
			bad("cost_centre", "is not used by kind cost_centre_tag, whose tag value names the cost centre")
		}
		if r.Shared != nil {
			bad("shared", "is not used by kind cost_centre_tag, whose tag value names the cost centre")
		}
		return errs
	}
	switch {
	case r.CostCentre == "" && r.Shared == nil:
		bad("cost_centre", "expected a cost centre, or shared")
	case r.CostCentre != "" && r.Shared != nil:
		bad("shared", "expected either cost_centre or shared, not both")
	case r.Shared != nil:
		errs = append(errs, validateShared(at+".shared", r.Shared)...)
	case reserved(r.CostCentre):
		bad("cost_centre", "%s is reserved for the costs no rule matches", Unallocated)
	}
	return errs
}

func validateShared(at string, s *Shared) []sdk.ErrorDetail {
	var errs []sdk.ErrorDetail
	bad := func(field, format string, args ...any) {
		errs = append(errs, sdk.ErrorDetail{Location: at + "." + field, Message: fmt.Sprintf(format, args...)})
	}
	switch s.Split {
	case SplitEven, SplitProportional, SplitFixed:
	default:
		bad("split", "expected one of even, proportional, fixed")
	}
	if len(s.CostCentres) == 0 {
		bad("cost_centres", "expected at least one cost centre")
	}
	seen := map[string]bool{}
	var sum int64
	for j := range s.CostCentres {
		c := &s.CostCentres[j]
		c.Name = strings.TrimSpace(c.Name)
		field := fmt.Sprintf("cost_centres[%d]", j)
		switch {
		case c.Name == "":
			bad(field+".name", "must not be empty")
		case reserved(c.Name):
			bad(field+".name", "%s is reserved for the costs no rule matches", Unallocated)
		case seen[c.Name]:
			bad(field+".name", "%s is named twice", c.Name)
		}
		seen[c.Name] = true
		switch {
		case s.Split != SplitFixed && c.Percent != nil:
			bad(field+".percent", "is only used by split fixed")
		case s.Split == SplitFixed && c.Percent == nil:
			bad(field+".percent", "is required by split fixed")
		case s.Split == SplitFixed:
			bp, exact := basisPoints(*c.Percent)
			if !exact || bp <= 0 || bp > 10000 {
				bad(field+".percent", "expected a percentage above 0 and at most 100, with at most two decimals")
			}
			sum += bp
		}
	}
	if s.Split == SplitFixed && len(errs) == 0 && sum != 10000 {
		bad("cost_centres", "the percentages add up to %s, not 100", strings.TrimRight(strings.TrimRight(fmt.Sprintf("%d.%02d", sum/100, sum%100), "0"), "."))
	}
	return errs
}

// reserved reports whether name is Unallocated, in any case.
func reserved(name string) bool { return strings.EqualFold(name, Unallocated) }
