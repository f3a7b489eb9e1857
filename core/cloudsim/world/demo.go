package world

import (
	"cmp"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The demo world's well-known users, fixed for every seed so docs and tests
// can sign in as them. Each is enabled, MFA-registered and a member of its
// tenant's access group.
const (
	// DemoAdmin holds Governance.Admin in the Contoso Retail tenant.
	DemoAdmin = "admin@contoso-retail.example"
	// DemoContosoUser is a standard user of the Contoso Retail tenant.
	DemoContosoUser = "alex.morgan@contoso-retail.example"
	// DemoFabrikamUser is a standard user of the Fabrikam Foods tenant.
	DemoFabrikamUser = "sam.taylor@fabrikam-foods.example"
	// DemoNorthwindUser is a standard user of the Northwind Travel tenant.
	DemoNorthwindUser = "jordan.lee@northwind-travel.example"
)

// Demo builds the built-in demo world for seed as of today's calendar day
// (in today's location). The same pair always yields the same world. Seeds
// differ in their random draws (ids, names, amounts, which resources are
// misconfigured), never in what the list below promises.
//
// The world moves with time: dated rows are generated relative to today,
// and each cost or reservation row depends only on the seed and its own
// date, never on today. A world built one day later therefore holds the
// same history plus that new day's rows, less the oldest day's, and a
// simulator whose clock passes midnight serves the new day. Ages (resource
// creation times, last sign-ins) stay relative to today instead, so the
// findings they drive, such as stale accounts, hold on any day.
//
// Contents:
//   - Brands Contoso Retail, Fabrikam Foods and Northwind Travel in five
//     tenants (Contoso Retail, Contoso Retail Dev, Fabrikam Foods, Fabrikam
//     Foods Dev, Northwind Travel) with nine subscriptions. Each tenant's
//     access group is "grp-" plus its name in kebab case; Northwind Travel
//     is not delegated. Only Contoso Retail has a billing account.
//   - Costs: one row per subscription, service and resource group for each
//     of the 365 days ending today, in USD, with weekly and yearly
//     seasonality, growth, noise and a 3–8x one- or two-day spike of one
//     series in every 24-day cycle (so at least one in any 30 days).
//     A series' day is shared, to the cent, among the resources of its
//     service's type in its group, one row each naming the resource:
//     virtual machines by size (a deallocated one takes none), storage
//     accounts, key vaults, SQL servers, AKS clusters, and the network
//     for Bandwidth. Azure Monitor's rows name no resource, nor does a
//     series whose group holds none of its type.
//     Beside those series, each unattached disk (Storage) and spare public
//     IP (Virtual Network) has a row of its own every day naming its
//     resource id, at a flat list price, so orphans have a known cost.
//   - Reservations: five reservations of the billing account, one row each
//     for the last 90 days, two of them clearly under-utilised; their
//     purchases (USD, paid up front) dated so that one expires in 20 days
//     and one in 75, whatever today is; two recommendations to buy more.
//   - Savings plans: two compute savings plans of the billing account
//     (USD 2.50 an hour for one year, expiring in 12 days whatever today
//     is, and USD 1.75 an hour for three years, expiring in 400), with
//     their daily utilisation over the last 90 days (the first clearly
//     under-used), and one recommendation to buy a savings plan.
//   - Resources per subscription in Azure id form: virtual machines with
//     disks, NICs and public IPs, unattached disks and unassociated IPs,
//     storage accounts (some without secure transfer or TLS 1.2), key
//     vaults, SQL servers, AKS clusters, networks and NSGs, tagged with env,
//     cost-center and usually owner. Types are lower case, as Resource
//     Graph returns them.
//   - Policy states on those resources, mostly Compliant: SOC 2 and NIST CSF
//     2.0 group names (the latter in both the dotted and the underscore
//     form) and policies with no group names, known only by the keywords of
//     their names.
//   - Compute and network quotas in eastus and westeurope, with usages at
//     74.99 %, 75 %, 89.99 %, 90 %, above 90 % and a limit of 0.
//   - 8–15 users per tenant: admins, privileged users (some without MFA),
//     users without MFA, guests, stale and disabled accounts; three access
//     reviews per tenant, and two more: Fabrikam Foods' completed "Global
//     Administrator access review" approved each of its privileged users,
//     among them one without MFA (an access review finding), and Contoso
//     Retail's "Finance application owners review" is in progress ten days
//     after its end, none of its decisions made: the world's one overdue
//     review, whatever today is.
//   - Identity posture: Contoso Retail requires MFA of every user and of
//     the Global Administrators and blocks legacy authentication, all
//     enforced; Contoso Retail Dev requires MFA of every user in
//     report-only and has a disabled legacy authentication block;
//     Fabrikam Foods has security defaults and no Conditional Access;
//     Fabrikam Foods Dev has neither; Northwind Travel requires MFA of its
//     Global Administrators and blocks legacy authentication in
//     report-only. Every privileged user is an active Global
//     Administrator; in Contoso Retail two more members (DemoContosoUser
//     and another) are eligible for the role in Privileged Identity
//     Management, which makes six, while Contoso Retail Dev and Fabrikam
//     Foods Dev have one each. Identity Protection has Fabrikam Foods'
//     first member without MFA at high risk, and Northwind Travel's first
//     guest at medium risk, remediated. Applications: Contoso Retail's
//     storefront's client secret ends in 12 days and its certificate in
//     300; Fabrikam Foods' supplier portal's secret ended 5 days ago;
//     Northwind Travel's booking partner's service principal has a
//     certificate ending in 90 days.
//   - DNS for every domain: SPF, DMARC, DKIM and MX that are strong on some
//     domains, weak or missing on others; MTA-STS (enforced, testing, a
//     stale MX, a policy not served), TLS-RPT, BIMI and DNSSEC on some, so
//     that each of their findings shows (see demoMailPosture).
//   - A DMARC report mailbox for every domain with DMARC, its rua address,
//     holding Google's and Microsoft's aggregate reports of two days, and
//     the reverse names (PTR) of their sources but a spoofer's (see
//     mailboxes).
//   - Exchange rates of EUR, GBP and JPY against USD on each weekday of the
//     365 days ending today, none on weekends, each a function of its date
//     alone. The costs stay in USD, so the rates change no figure of theirs.
//
// Well-known users: DemoAdmin (admin@contoso-retail.example, Governance.Admin
// in Contoso Retail) and the standard users DemoContosoUser
// (alex.morgan@contoso-retail.example), DemoFabrikamUser
// (sam.taylor@fabrikam-foods.example) and DemoNorthwindUser
// (jordan.lee@northwind-travel.example).
func Demo(seed int64, today time.Time) *World {
	g := newDemoGen(seed, today)
	// Everything drawn from g.r is drawn in the same order and number for
	// any today, so the estate itself does not change from day to day.
	g.tenants()
	g.resources()
	g.policyStates()
	g.policyDefinitions()
	g.quotas()
	g.users()
	g.accessReviews()
	g.dns()
	g.shares()
	g.costs()
	g.reservations()
	g.exchangeRates()
	g.savingsPlans()
	g.securityAssessments()
	g.conditionalAccess()
	g.eligibleAdmins()
	g.riskyUsers()
	g.applications()
	g.reviewFigures()
	g.mailboxes()
	return g.w
}

func newDemoGen(seed int64, today time.Time) *demoGen {
	y, m, d := today.Date()
	g := &demoGen{
		seed:   seed,
		r:      rand.New(rand.NewPCG(uint64(seed), streamStructure)),
		today:  time.Date(y, m, d, 0, 0, 0, 0, time.UTC),
		w:      &World{},
		emails: map[string]bool{},
	}
	g.day = g.today.Unix() / secondsPerDay
	return g
}

// DemoSpike is one cost spike the demo world injects: the cost of one
// subscription's service and resource group on Date is Factor times what
// it would have been.
type DemoSpike struct {
	Date           string
	SubscriptionID string
	Service        string
	ResourceGroup  string
	Factor         float64
}

// DemoSpikes reports the spikes Demo(seed, today) injects into its costs,
// in date order, so tests of anomaly detection have the ground truth.
func DemoSpikes(seed int64, today time.Time) []DemoSpike {
	g := newDemoGen(seed, today)
	// The series are drawn first, so the estate's other draws need not be.
	g.tenants()
	type series struct {
		sub *demoSub
		s   *demoSeries
	}
	var all []series
	for _, sub := range g.subs {
		for i := range sub.series {
			all = append(all, series{sub, &sub.series[i]})
		}
	}
	var out []DemoSpike
	for n := g.day - 364; n <= g.day; n++ {
		k, factor := g.anomalyOn(n, len(all))
		if k < 0 {
			continue
		}
		out = append(out, DemoSpike{
			Date:           time.Unix(n*secondsPerDay, 0).UTC().Format(DateLayout),
			SubscriptionID: all[k].sub.id,
			Service:        all[k].s.service.name,
			ResourceGroup:  all[k].s.service.rg,
			Factor:         factor,
		})
	}
	return out
}

const secondsPerDay = 24 * 60 * 60

// Stream ids keep the generator's independent random sequences apart.
const (
	streamStructure uint64 = iota + 1
	streamCost
	streamAnomaly
	streamReservation
	streamSavingsPlan
)

// growthEpoch anchors cost growth to a fixed date rather than to today, so
// a date's cost is the same whichever day the world is built on.
var growthEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / secondsPerDay

// Anomalies: one spike per anomalyCycle days, starting up to
// anomalyJitter-1 days into the cycle. Consecutive spikes are therefore
// 18 to 30 days apart, which puts one in every 30-day window without
// making the dates regular.
const (
	anomalyCycle  = 24
	anomalyJitter = 7
)

type demoBrand struct {
	name string // its production tenant's name; a dev tenant adds " Dev"
	// seasonPeak (day of year) and seasonAmp shape the brand's yearly
	// cycle: retail peaks before Christmas, travel in summer.
	seasonPeak int
	seasonAmp  float64
}

var demoBrands = []demoBrand{
	{"Contoso Retail", 345, 0.12},
	{"Fabrikam Foods", 300, 0.05},
	{"Northwind Travel", 200, 0.15},
}

type demoTenantSpec struct {
	brand     int
	short     string // prefix of subscription and resource names
	env       string
	subs      []string
	domains   []string // the first is the users' domain
	billing   bool
	delegated bool
	// wellKnown is the tenant's documented standard user ("" for none).
	wellKnown string
}

var demoTenantSpecs = []demoTenantSpec{
	{0, "contoso", "prod", []string{"core", "shop", "data"}, []string{"contoso-retail.example", "contoso-shop.example"}, true, true, DemoContosoUser},
	{0, "contoso", "dev", []string{"sandbox"}, []string{"contoso-retail-dev.example"}, false, true, ""},
	{1, "fabrikam", "prod", []string{"core", "supply"}, []string{"fabrikam-foods.example"}, false, true, DemoFabrikamUser},
	{1, "fabrikam", "dev", []string{"sandbox"}, []string{"fabrikam-foods-dev.example"}, false, true, ""},
	// Northwind manages its own estate: the one tenant not delegated.
	{2, "northwind", "prod", []string{"core", "bookings"}, []string{"northwind-travel.example", "northwind-holidays.example"}, false, false, DemoNorthwindUser},
}

type demoService struct {
	name, rg   string
	lo, hi     float64 // a production subscription's daily cost range, USD
	wkLo, wkHi float64 // weekend factor range: batch and web load drop, storage barely
	everywhere bool
	// resourceType is the type of the resources in rg that bill under
	// the service: its daily cost is shared among them. Empty when the
	// inventory shows none, as for Azure Monitor's workspaces.
	resourceType string
}

var demoServices = []demoService{
	{"Virtual Machines", "rg-app", 180, 420, 0.55, 0.7, true, typeVM},
	{"Storage", "rg-data", 25, 70, 0.9, 0.97, true, typeStorage},
	{"Bandwidth", "rg-network", 10, 40, 0.6, 0.75, true, typeVNet},
	{"Key Vault", "rg-security", 2, 6, 0.85, 0.95, true, typeKeyVault},
	{"Azure SQL Database", "rg-data", 60, 160, 0.75, 0.85, false, typeSQLServer},
	{"Azure Kubernetes Service", "rg-aks", 90, 260, 0.65, 0.8, false, typeAKS},
	{"Azure Monitor", "rg-monitoring", 8, 25, 0.8, 0.9, false, ""},
}

const (
	typeVM        = "Microsoft.Compute/virtualMachines"
	typeDisk      = "Microsoft.Compute/disks"
	typeNIC       = "Microsoft.Network/networkInterfaces"
	typePublicIP  = "Microsoft.Network/publicIPAddresses"
	typeVNet      = "Microsoft.Network/virtualNetworks"
	typeNSG       = "Microsoft.Network/networkSecurityGroups"
	typeStorage   = "Microsoft.Storage/storageAccounts"
	typeKeyVault  = "Microsoft.KeyVault/vaults"
	typeSQLServer = "Microsoft.Sql/servers"
	typeAKS       = "Microsoft.ContainerService/managedClusters"
)

type demoSeries struct {
	service *demoService
	// shares are the resources the series' daily cost is split among, in
	// the order the inventory lists them; none: the cost names no
	// resource.
	shares     []demoShare
	base       float64
	weekend    float64
	growth     float64 // per year, continuous
	seasonPeak int
	seasonAmp  float64
}

// demoShare is a resource's weight in its series' cost.
type demoShare struct {
	id     string
	weight float64
}

// demoBilled is a resource whose own cost the demo reports: the same
// amount every day, as a disk or a static IP costs whether used or not.
type demoBilled struct {
	id, service, rg string
	daily           float64
}

// What a day of an orphan costs, USD: premium SSD disks by size (P15, P20,
// P30 at list price over 30 days) and a static standard public IP.
var diskDailyCost = map[float64]float64{256: 1.27, 512: 2.44, 1024: 4.51}

const publicIPDailyCost = 0.12

type demoSub struct {
	id, name  string
	part      string // the name within its tenant, e.g. "core"
	index     int    // position among all subscriptions, for private address ranges
	tenant    *demoTenant
	locations []string
	series    []demoSeries
	// billed are the resources costed on their own rows, beside the
	// series.
	billed []demoBilled
	// byType lists the subscription's resources by their ARM type, for the
	// policy states evaluated over them.
	byType map[string][]Resource
}

type demoTenant struct {
	spec  *demoTenantSpec
	t     *Tenant
	users []User
}

type demoReservation struct {
	id, sku  string
	reserved float64 // hours a day
	use      float64 // typical share of them used
}

// demoPurchase is how a demo reservation was bought, in the order of
// demoGen.billed: the term, its price in USD, and the day it ends
// relative to today (a positive expires days from today), so that one
// reservation always expires within 30 days and one within 90.
type demoPurchase struct {
	term      string
	expiresIn int
	amount    float64
	group     string
	ratio     float64
}

var demoPurchases = []demoPurchase{
	{"P3Y", 20, 12157.20, "DSv5 Series", 2},
	{"P1Y", 75, 5553.84, "ESv5 Series", 4},
	{"P3Y", 700, 21024.00, "SQL Database Gen5 General Purpose", 1},
	{"P1Y", 265, 4344.96, "BS Series", 16},
	{"P3Y", 190, 4288.90, "DSv3 Series", 1},
}

type demoGen struct {
	seed  int64
	r     *rand.Rand
	today time.Time // midnight UTC of today's calendar day
	day   int64     // today as days since 1970-01-01
	w     *World
	ts    []*demoTenant
	subs  []*demoSub
	// account and billed are the one billing account and its reservations.
	account string
	billed  []demoReservation
	emails  map[string]bool
}

// keyed returns a generator for one item of a stream on one day. Rows
// drawn from it depend on nothing else, which is what keeps history stable
// as today moves.
func keyed(seed int64, stream, item uint64, day int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), mix64(stream<<56^item<<32^uint64(day))))
}

// mix64 is the splitmix64 finaliser: it spreads neighbouring keys over the
// whole seed space so consecutive days do not get related sequences.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func formatGUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *demoGen) guid() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], g.r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], g.r.Uint64())
	return formatGUID(b)
}

// policyDefinitionID derives a definition's id from its name, not the
// seed: built-in definitions have the same id in every tenant.
func policyDefinitionID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "/providers/Microsoft.Authorization/policyDefinitions/" + formatGUID([16]byte(sum[:16]))
}

func (g *demoGen) between(lo, hi float64) float64 { return lo + (hi-lo)*g.r.Float64() }

func pick[T any](g *demoGen, options ...T) T { return options[g.r.IntN(len(options))] }

func (g *demoGen) date(daysAgo int) string {
	return g.today.AddDate(0, 0, -daysAgo).Format(DateLayout)
}

func (g *demoGen) tenants() {
	for i := range demoTenantSpecs {
		spec := &demoTenantSpecs[i]
		name := demoBrands[spec.brand].name
		if spec.env == "dev" {
			name += " Dev"
		}
		t := Tenant{
			Name:              name,
			Brand:             demoBrands[spec.brand].name,
			DirectoryTenantID: g.guid(),
			AccessGroups:      []string{"grp-" + kebab(name)},
			Delegated:         spec.delegated,
			Domains:           slices.Clone(spec.domains),
		}
		if spec.billing {
			// A Microsoft Customer Agreement billing account name.
			g.account = g.guid() + ":" + g.guid() + "_2019-05-31"
			t.BillingAccountID = ptr(g.account)
			g.billed = []demoReservation{
				{g.guid(), "Standard_D4s_v5", 6 * 24, g.between(0.95, 0.99)},
				{g.guid(), "Standard_E8s_v5", 2 * 24, g.between(0.88, 0.95)},
				{g.guid(), "SQLDB_GP_Compute_Gen5", 8 * 24, g.between(0.97, 1)},
				{g.guid(), "Standard_B2ms", 10 * 24, g.between(0.5, 0.65)},
				{g.guid(), "Standard_D2s_v3", 4 * 24, g.between(0.2, 0.35)},
			}
		}
		dt := &demoTenant{spec: spec}
		for k, name := range spec.subs {
			s := &demoSub{
				id:        g.guid(),
				name:      fmt.Sprintf("%s-%s-%s", spec.short, name, spec.env),
				part:      name,
				index:     len(g.subs),
				tenant:    dt,
				locations: []string{"eastus"},
				byType:    map[string][]Resource{},
			}
			// Each production tenant's first subscription also runs in Europe.
			if k == 0 && spec.env == "prod" {
				s.locations = append(s.locations, "westeurope")
			}
			t.Subscriptions = append(t.Subscriptions, Subscription{ID: s.id, Name: s.name})
			g.addSeries(s, spec, k == 0)
			g.subs = append(g.subs, s)
		}
		g.w.Tenants = append(g.w.Tenants, t)
		g.ts = append(g.ts, dt)
	}
	// Tenants were appended by value; point at the stored copies.
	for i := range g.ts {
		g.ts[i].t = &g.w.Tenants[i]
	}
}

func (g *demoGen) addSeries(s *demoSub, spec *demoTenantSpec, first bool) {
	scale := 1.0
	if spec.env == "dev" {
		scale = g.between(0.15, 0.3)
	}
	brand := demoBrands[spec.brand]
	for i := range demoServices {
		svc := &demoServices[i]
		// Every tenant's first subscription holds a database, so SQL
		// resources and policies exist for any seed.
		keep := svc.everywhere || g.r.Float64() < 0.6 || (first && svc.resourceType == typeSQLServer)
		if !keep {
			continue
		}
		s.series = append(s.series, demoSeries{
			service:    svc,
			base:       scale * g.between(svc.lo, svc.hi),
			weekend:    g.between(svc.wkLo, svc.wkHi),
			growth:     g.between(0.05, 0.25),
			seasonPeak: brand.seasonPeak,
			seasonAmp:  brand.seasonAmp,
		})
	}
}

func kebab(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "-") }

func (s *demoSub) has(resourceType string) bool {
	for _, se := range s.series {
		if se.service.resourceType == resourceType {
			return true
		}
	}
	return false
}

func (g *demoGen) add(s *demoSub, rg, typ, name, location string, props map[string]any) Resource {
	tags := map[string]string{
		"env":         s.tenant.spec.env,
		"cost-center": fmt.Sprintf("CC-%d", 1100+s.index*10),
	}
	// About one resource in five has lost its owner tag.
	if g.r.Float64() < 0.8 {
		tags["owner"] = pick(g, "platform-team", "data-team", "web-team", "finance-it") + "@" + s.tenant.spec.domains[0]
	}
	r := Resource{
		SubscriptionID: s.id,
		ID:             armID(s.id, rg, typ, name),
		Name:           name,
		Type:           strings.ToLower(typ),
		Location:       location,
		Tags:           tags,
		Properties:     props,
	}
	g.w.Resources = append(g.w.Resources, r)
	s.byType[typ] = append(s.byType[typ], r)
	return r
}

func armID(sub, rg, typ, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", sub, rg, typ, name)
}

// Property values use the shapes JSON decoding produces (float64, []any,
// map[string]any), so code reading them sees the same thing whether the
// world came from Demo or from a world file.
func (g *demoGen) resources() {
	publicIPs := 0
	nextPublicIP := func() string {
		publicIPs++
		return fmt.Sprintf("203.0.113.%d", publicIPs)
	}
	for _, s := range g.subs {
		spec := s.tenant.spec
		loc := func() string { return s.locations[g.r.IntN(len(s.locations))] }
		short := spec.short + "-" + s.part
		home := s.locations[0]

		vnet := g.add(s, "rg-network", typeVNet, "vnet-"+short, home, map[string]any{
			"addressSpace": map[string]any{"addressPrefixes": []any{fmt.Sprintf("10.%d.0.0/16", s.index)}},
			"subnets":      []any{map[string]any{"name": "default", "properties": map[string]any{"addressPrefix": fmt.Sprintf("10.%d.1.0/24", s.index)}}},
		})
		rules := []any{nsgRule("allow-https", "443", "Internet", 100)}
		// Management ports open to the internet: the finding an NSG review exists for.
		if g.r.Float64() < 0.35 {
			rules = append(rules, nsgRule("allow-rdp", "3389", "*", 200))
		}
		g.add(s, "rg-network", typeNSG, "nsg-"+short+"-web", home, map[string]any{"securityRules": rules})

		vms := 1 + g.r.IntN(2)
		if spec.env == "prod" {
			vms = 2 + g.r.IntN(3)
		}
		roles := []string{"web", "app", "api", "batch"}
		for v := range vms {
			name := fmt.Sprintf("vm-%s-%s-%02d", short, roles[v%len(roles)], v/len(roles)+1)
			l := loc()
			osType := pick(g, "Linux", "Linux", "Windows")
			vmID := armID(s.id, "rg-app", typeVM, name)
			diskName := name + "-osdisk"
			nicID := armID(s.id, "rg-app", typeNIC, name+"-nic")
			ipConfig := map[string]any{
				"privateIPAddress": fmt.Sprintf("10.%d.1.%d", s.index, v+4),
				"subnet":           map[string]any{"id": armID(s.id, "rg-network", typeVNet, vnet.Name) + "/subnets/default"},
			}
			// The web tier faces the internet.
			if v == 0 {
				pipName := name + "-pip"
				ipConfig["publicIPAddress"] = map[string]any{"id": armID(s.id, "rg-app", typePublicIP, pipName)}
				g.add(s, "rg-app", typePublicIP, pipName, l, map[string]any{
					"ipAddress":                nextPublicIP(),
					"publicIPAllocationMethod": "Static",
					"ipConfiguration":          map[string]any{"id": nicID + "/ipConfigurations/ipconfig1"},
				})
			}
			g.add(s, "rg-app", typeNIC, name+"-nic", l, map[string]any{
				"virtualMachine":   map[string]any{"id": vmID},
				"ipConfigurations": []any{map[string]any{"name": "ipconfig1", "id": nicID + "/ipConfigurations/ipconfig1", "properties": ipConfig}},
			})
			g.add(s, "rg-app", typeDisk, diskName, l, map[string]any{
				"diskSizeGB":  float64(128),
				"diskState":   "Attached",
				"osType":      osType,
				"timeCreated": g.date(200+g.r.IntN(300)) + "T09:00:00Z",
			})
			power := "PowerState/running"
			if g.r.Float64() < 0.15 {
				power = "PowerState/deallocated"
			}
			g.add(s, "rg-app", typeVM, name, l, map[string]any{
				"hardwareProfile": map[string]any{"vmSize": pick(g, "Standard_D2s_v3", "Standard_D4s_v5", "Standard_E4s_v5", "Standard_B2ms")},
				"storageProfile": map[string]any{"osDisk": map[string]any{
					"name": diskName, "osType": osType,
					"managedDisk": map[string]any{"id": armID(s.id, "rg-app", typeDisk, diskName)},
				}},
				"networkProfile": map[string]any{"networkInterfaces": []any{map[string]any{"id": nicID}}},
				"extended":       map[string]any{"instanceView": map[string]any{"powerState": map[string]any{"code": power}}},
			})
		}

		// Orphans left behind by deleted machines; the first subscription
		// always has both kinds so every seed shows them.
		orphanDisks, orphanIPs := g.r.IntN(3), g.r.IntN(2)
		if s.index == 0 {
			orphanDisks, orphanIPs = max(orphanDisks, 1), 1
		}
		for k := range orphanDisks {
			size := pick(g, 256.0, 512, 1024)
			d := g.add(s, "rg-app", typeDisk, fmt.Sprintf("disk-%s-old-%02d", short, k+1), loc(), map[string]any{
				"diskSizeGB":  size,
				"diskState":   "Unattached",
				"timeCreated": g.date(100+g.r.IntN(300)) + "T09:00:00Z",
			})
			s.billed = append(s.billed, demoBilled{id: d.ID, service: "Storage", rg: "rg-app", daily: diskDailyCost[size]})
		}
		for k := range orphanIPs {
			ip := g.add(s, "rg-app", typePublicIP, fmt.Sprintf("pip-%s-spare-%02d", short, k+1), loc(), map[string]any{
				"ipAddress":                nextPublicIP(),
				"publicIPAllocationMethod": "Static",
			})
			s.billed = append(s.billed, demoBilled{id: ip.ID, service: "Virtual Network", rg: "rg-app", daily: publicIPDailyCost})
		}

		storage := 1 + g.r.IntN(3)
		for k := range storage {
			// Storage account names are global, of lower-case letters and
			// digits only: a random part keeps seeds apart, k keeps
			// accounts of one subscription apart.
			name := fmt.Sprintf("st%s%s%02x%02d", spec.short, s.part, g.r.IntN(256), k+1)
			https := g.r.Float64() < 0.8
			// One account in the shop subscription accepts plain HTTP, so
			// the secure-transfer finding exists for every seed.
			if s.index == 1 && k == 0 {
				https = false
			}
			tls := "TLS1_2"
			if g.r.Float64() < 0.2 {
				tls = pick(g, "TLS1_0", "TLS1_1")
			}
			g.add(s, "rg-data", typeStorage, name, loc(), map[string]any{
				"supportsHttpsTrafficOnly": https,
				"minimumTlsVersion":        tls,
				"allowBlobPublicAccess":    g.r.Float64() < 0.2,
				"accessTier":               "Hot",
			})
		}

		vaults := 1 + g.r.IntN(2)
		for k := range vaults {
			g.add(s, "rg-security", typeKeyVault, fmt.Sprintf("kv-%s-%02d", short, k+1), loc(), map[string]any{
				"tenantId":                s.tenant.t.DirectoryTenantID,
				"enableSoftDelete":        true,
				"enablePurgeProtection":   g.r.Float64() < 0.7,
				"enableRbacAuthorization": g.r.Float64() < 0.6,
				"sku":                     map[string]any{"family": "A", "name": "standard"},
			})
		}
		if s.has(typeSQLServer) {
			tls := "1.2"
			if g.r.Float64() < 0.3 {
				tls = "1.0"
			}
			g.add(s, "rg-data", typeSQLServer, "sql-"+short, home, map[string]any{
				"version":             "12.0",
				"administratorLogin":  "sqladmin",
				"minimalTlsVersion":   tls,
				"publicNetworkAccess": pick(g, "Enabled", "Disabled"),
			})
		}
		if s.has(typeAKS) {
			g.add(s, "rg-aks", typeAKS, "aks-"+short, home, map[string]any{
				"kubernetesVersion": pick(g, "1.30.6", "1.31.2", "1.29.9"),
				"agentPoolProfiles": []any{map[string]any{"name": "system", "count": float64(2 + g.r.IntN(4)), "vmSize": "Standard_D4s_v5"}},
			})
		}
	}
}

func nsgRule(name, port, source string, priority int) map[string]any {
	return map[string]any{"name": name, "properties": map[string]any{
		"access": "Allow", "direction": "Inbound", "protocol": "Tcp",
		"destinationPortRange": port, "sourceAddressPrefix": source, "priority": float64(priority),
	}}
}

type demoPolicy struct {
	name, category, severity string
	groups                   []string
	// target is the ARM type evaluated, or "" for the subscription itself.
	target string
	// compliant decides from the resource's own properties, so findings
	// agree with the inventory; policies without it fail at failRate.
	compliant func(props map[string]any) bool
	failRate  float64
}

func propIs(key string, want any) func(map[string]any) bool {
	return func(p map[string]any) bool { return p[key] == want }
}

// demoPolicies are assigned in every subscription. The first eight carry
// the group names the SOC 2 and NIST CSF 2.0 initiatives assign. NIST CSF
// 2.0 group names are met both dotted (NIST_CSF_v2.0_PR.AA_01) and with
// underscores (NIST_CSF_v2.0_PR_AA_01), so both forms appear and mapping
// code must accept either. The rest come from plain assignments with no
// groups: only the keywords in their names tell what control they serve.
var demoPolicies = []demoPolicy{
	{"Accounts with owner permissions on Azure resources should be MFA enabled", "Security Center", "High",
		[]string{"SOC_2_CC6.1", "NIST_CSF_v2.0_PR.AA_03"}, "", nil, 0.4},
	{"Storage accounts should have the specified minimum TLS version", "Storage", "Medium",
		[]string{"SOC_2_CC6.7", "NIST_CSF_v2.0_PR_DS_02"}, typeStorage, propIs("minimumTlsVersion", "TLS1_2"), 0},
	{"Key vaults should have deletion protection enabled", "Key Vault", "Medium",
		[]string{"SOC_2_A1.2", "NIST_CSF_v2.0_PR.DS_11"}, typeKeyVault, propIs("enablePurgeProtection", true), 0},
	{"Management ports of virtual machines should be protected with just-in-time network access control", "Security Center", "High",
		[]string{"SOC_2_CC6.6", "NIST_CSF_v2.0_PR_IR_01"}, typeVM, nil, 0.25},
	{"Azure Defender for servers should be enabled", "Security Center", "High",
		[]string{"SOC_2_CC7.2", "NIST_CSF_v2.0_DE.CM_01"}, "", nil, 0.3},
	{"Windows virtual machines should enable Azure Disk Encryption or EncryptionAtHost", "Guest Configuration", "Medium",
		[]string{"SOC_2_CC6.1", "NIST_CSF_v2.0_PR_DS_01"}, typeVM, nil, 0.2},
	{"Auditing on SQL server should be enabled", "SQL", "Medium",
		[]string{"SOC_2_CC7.2", "NIST_CSF_v2.0_PR.PS_04"}, typeSQLServer, nil, 0.3},
	{"Azure SQL Database should be running TLS version 1.2 or newer", "SQL", "Medium",
		[]string{"SOC_2_CC6.7", "NIST_CSF_v2.0_PR.DS_02"}, typeSQLServer, propIs("minimalTlsVersion", "1.2"), 0},

	{"Secure transfer to storage accounts should be enabled", "Storage", "High",
		nil, typeStorage, propIs("supportsHttpsTrafficOnly", true), 0},
	{"MFA should be enabled on accounts with write permissions on your subscription", "Security Center", "High",
		nil, "", nil, 0.4},
	{"Guest accounts with owner permissions on Azure resources should be removed", "Identity", "High",
		nil, "", nil, 0.3},
	{"Audit diagnostic setting for selected resource types", "Monitoring", "Low",
		nil, typeVM, nil, 0.3},
	{"Resource logs in Key Vault should be enabled", "Key Vault", "Low",
		nil, typeKeyVault, nil, 0.3},
	{"Network Watcher should be enabled", "Network", "Low",
		nil, "", nil, 0.2},
	{"All network ports should be restricted on network security groups associated to your virtual machine", "Network", "Medium",
		nil, typeVM, nil, 0.2},
}

func (g *demoGen) policyStates() {
	for _, s := range g.subs {
		for _, p := range demoPolicies {
			targets := s.byType[p.target]
			if p.target == "" {
				targets = []Resource{{ID: "/subscriptions/" + s.id}}
			}
			for _, res := range targets {
				ok := g.r.Float64() >= p.failRate
				if p.compliant != nil {
					ok = p.compliant(res.Properties)
				}
				state := "Compliant"
				if !ok {
					state = "NonCompliant"
				}
				// Evaluations ran early this morning.
				at := g.today.Add(2*time.Hour + time.Duration(g.r.IntN(180))*time.Minute)
				g.w.PolicyStates = append(g.w.PolicyStates, PolicyState{
					SubscriptionID:     s.id,
					PolicyDefinitionID: policyDefinitionID(p.name),
					PolicyName:         p.name,
					Category:           p.category,
					GroupNames:         slices.Clone(p.groups),
					ComplianceState:    state,
					ResourceID:         res.ID,
					Severity:           p.severity,
					Timestamp:          at.Format(time.RFC3339),
				})
			}
		}
	}
}

// demoGuidance is what each demo policy's definition says beyond its
// name: its description and how to fix a resource it finds
// non-compliant. A policy missing here has a definition without them.
var demoGuidance = map[string]struct{ description, remediation string }{
	"Accounts with owner permissions on Azure resources should be MFA enabled": {
		"Multi-Factor Authentication (MFA) should be enabled for all subscription accounts with owner permissions to prevent a breach of accounts or resources.",
		"Require MFA for the listed owner accounts with a Conditional Access policy, or enable per-user MFA for them in Microsoft Entra ID."},
	"Storage accounts should have the specified minimum TLS version": {
		"Configure a minimum TLS version for secure communication between the client application and the storage account.",
		"In the storage account's Configuration, set Minimum TLS version to Version 1.2 and save."},
	"Key vaults should have deletion protection enabled": {
		"Malicious deletion of a key vault can lead to permanent data loss. Purge protection enforces a mandatory retention period for soft deleted key vaults.",
		"In the key vault's Properties, enable purge protection. Purge protection cannot be turned off once enabled."},
	"Management ports of virtual machines should be protected with just-in-time network access control": {
		"Possible network Just In Time (JIT) access will be monitored by Azure Security Center as recommendations.",
		"In Defender for Cloud's Workload protections, open Just-in-time VM access and enable it on the listed virtual machines."},
	"Azure Defender for servers should be enabled": {
		"Azure Defender for servers provides real-time threat protection for server workloads and generates hardening recommendations as well as alerts about suspicious activities.",
		"In Defender for Cloud's Environment settings, open the subscription's plans and turn the Servers plan on."},
	"Windows virtual machines should enable Azure Disk Encryption or EncryptionAtHost": {
		"Virtual machines' OS and data disks should be encrypted at rest with platform or customer-managed keys.",
		"Enable encryption at host on the virtual machine (stop it, set Encryption at host under Disks, start it), or enable Azure Disk Encryption with a key vault."},
	"Auditing on SQL server should be enabled": {
		"Auditing on your SQL Server should be enabled to track database activities across all databases on the server and save them in an audit log.",
		"In the SQL server's Auditing blade, turn on Azure SQL Auditing and choose a storage account, Log Analytics workspace or event hub as the destination."},
	"Azure SQL Database should be running TLS version 1.2 or newer": {
		"Setting TLS version to 1.2 or newer improves security by ensuring your Azure SQL Database can only be accessed from clients using TLS 1.2 or newer.",
		"In the SQL server's Networking blade, under Connectivity, set Minimum TLS version to 1.2."},
	"Secure transfer to storage accounts should be enabled": {
		"Secure transfer is an option that forces your storage account to accept requests only from secure connections (HTTPS).",
		"In the storage account's Configuration, set Secure transfer required to Enabled."},
	"MFA should be enabled on accounts with write permissions on your subscription": {
		"Multi-Factor Authentication (MFA) should be enabled for all subscription accounts with write privileges to prevent a breach of accounts or resources.",
		"Require MFA for the listed accounts with write permissions with a Conditional Access policy."},
	"Guest accounts with owner permissions on Azure resources should be removed": {
		"External accounts with owner permissions should be removed from your subscription in order to prevent unmonitored access.",
		"In the subscription's Access control (IAM), remove the Owner role assignments of the listed guest accounts."},
	"Audit diagnostic setting for selected resource types": {
		"Audit diagnostic setting for selected resource types. Be sure to select only resource types which support diagnostics settings.",
		"In the resource's Diagnostic settings, add a setting that sends its logs and metrics to a Log Analytics workspace."},
	"Network Watcher should be enabled": {
		"Network Watcher is a regional service that enables you to monitor and diagnose conditions at a network scenario level in, to, and from Azure.",
		"In Network Watcher, enable it in each region where the subscription has a virtual network."},
	"All network ports should be restricted on network security groups associated to your virtual machine": {
		"Azure Security Center has identified some of your network security groups' inbound rules to be too permissive.",
		"In the network security group of the virtual machine, restrict the inbound rules that allow Any or Internet to the ports and sources the workload needs."},
}

// policyDefinitions lists each demo policy's definition with its
// guidance; "Resource logs in Key Vault should be enabled" has none, so
// the demo shows a finding without remediation too.
func (g *demoGen) policyDefinitions() {
	for _, p := range demoPolicies {
		d := demoGuidance[p.name]
		g.w.PolicyDefinitions = append(g.w.PolicyDefinitions, PolicyDefinition{ID: policyDefinitionID(p.name), DisplayName: p.name,
			Description: d.description, Category: p.category, Severity: p.severity, Remediation: d.remediation})
	}
}

type quotaKey struct{ sub, location, name string }

var demoQuotaNames = []struct {
	provider, name string
	limit          float64
}{
	{"compute", "cores", 350},
	{"compute", "standardDSv3Family", 200},
	{"compute", "virtualMachines", 25000},
	{"compute", "availabilitySets", 2500},
	{"network", "VirtualNetworks", 1000},
	{"network", "PublicIPAddresses", 1000},
	{"network", "NetworkSecurityGroups", 5000},
	{"network", "LoadBalancers", 1000},
}

// demoQuotaEdges pins usages (current, limit) on and beside the health
// boundaries (ok < 75 % ≤ warning < 90 % ≤ critical) for every seed; the
// other quotas are drawn well below them.
var demoQuotaEdges = map[quotaKey][2]float64{
	{"contoso-core-prod", "eastus", "cores"}:                    {7499, 10000}, // 74.99 %: still ok
	{"contoso-shop-prod", "eastus", "PublicIPAddresses"}:        {750, 1000},   // 75 %: warning
	{"contoso-core-prod", "eastus", "standardDSv3Family"}:       {8999, 10000}, // 89.99 %: still warning
	{"fabrikam-core-prod", "eastus", "cores"}:                   {315, 350},    // 90 %: critical
	{"northwind-core-prod", "westeurope", "standardDSv3Family"}: {190, 200},    // 95 %
	{"contoso-data-prod", "eastus", "NetworkSecurityGroups"}:    {4900, 5000},  // 98 %
	{"contoso-sandbox-dev", "eastus", "cores"}:                  {100, 100},    // exhausted
}

func (g *demoGen) quotas() {
	for _, s := range g.subs {
		for _, loc := range s.locations {
			for _, q := range demoQuotaNames {
				current := math.Round(q.limit * g.between(0.02, 0.5))
				limit := q.limit
				if edge, ok := demoQuotaEdges[quotaKey{s.name, loc, q.name}]; ok {
					current, limit = edge[0], edge[1]
				}
				g.w.Quotas = append(g.w.Quotas, Quota{SubscriptionID: s.id, Location: loc, Provider: q.provider, Name: q.name, CurrentValue: current, Limit: limit})
			}
		}
		// A GPU family that was never requested has a limit of 0: its
		// usage percentage is undefined, not 100 %.
		if s.name == "fabrikam-sandbox-dev" {
			g.w.Quotas = append(g.w.Quotas, Quota{SubscriptionID: s.id, Location: "eastus", Provider: "compute", Name: "standardNCASv3_T4Family"})
		}
	}
}

type userKind int

const (
	kindMember userKind = iota
	kindNoMFA
	kindPrivileged
	kindPrivilegedNoMFA
	kindAdmin
	kindGuest
	kindStale
	kindDisabled
)

var (
	demoFirstNames = []string{"Aisha", "Ben", "Carla", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Luca",
		"Maya", "Nils", "Olga", "Priya", "Quinn", "Rafael", "Sofia", "Tomas", "Uma", "Victor", "Wen", "Yara", "Zane"}
	demoLastNames = []string{"Adams", "Brooks", "Costa", "Diaz", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski",
		"Larsen", "Moreau", "Nakamura", "Okafor", "Petrov", "Quint", "Rossi", "Schmidt", "Tanaka", "Ueda", "Varga", "Weber", "Young"}
	// Guests come from partner organisations.
	demoGuestDomains = []string{"adatum-consulting.example", "litware.example", "tailspin-partners.example", "wingtip-agency.example"}
	demoMFAMethods   = []string{"microsoftAuthenticator", "phoneAuthentication", "fido2", "softwareOneTimePasscode"}
)

func (g *demoGen) users() {
	for i, dt := range g.ts {
		var kinds []userKind
		if i == 0 {
			// A second admin besides the well-known one.
			kinds = append(kinds, kindAdmin)
		}
		kinds = append(kinds, kindPrivileged, kindNoMFA, kindGuest, kindStale, kindDisabled)
		// Every other tenant has an administrator without MFA.
		if i%2 == 0 {
			kinds = append(kinds, kindPrivilegedNoMFA)
		}
		if g.r.IntN(2) == 0 {
			kinds = append(kinds, kindGuest)
		}
		known := 0
		if i == 0 {
			known++
		}
		if dt.spec.wellKnown != "" {
			known++
		}
		for total := 8 + g.r.IntN(8); len(kinds)+known < total; {
			kinds = append(kinds, kindMember)
		}
		g.r.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })

		if i == 0 {
			g.addUser(dt, g.wellKnown(dt, DemoAdmin, "Governance Admin", true))
		}
		if dt.spec.wellKnown != "" {
			g.addUser(dt, g.wellKnown(dt, dt.spec.wellKnown, nameOf(dt.spec.wellKnown), false))
		}
		for _, k := range kinds {
			g.addUser(dt, g.user(dt, k))
		}
	}
}

func (g *demoGen) addUser(dt *demoTenant, u User) {
	g.emails[u.Email] = true
	dt.users = append(dt.users, u)
	g.w.Users = append(g.w.Users, u)
}

// nameOf turns "alex.morgan@…" into "Alex Morgan".
func nameOf(email string) string {
	local, _, _ := strings.Cut(email, "@")
	parts := strings.Split(local, ".")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, " ")
}

// wellKnown builds a documented user. Apart from its tenant's id nothing
// about it depends on the seed, so docs and tests can rely on it.
func (g *demoGen) wellKnown(dt *demoTenant, email, name string, admin bool) User {
	u := User{
		Email:             email,
		Name:              name,
		DirectoryTenantID: dt.t.DirectoryTenantID,
		Roles:             []string{},
		Groups:            slices.Clone(dt.t.AccessGroups),
		UserType:          "Member",
		AccountEnabled:    ptr(true),
		MFARegistered:     true,
		MFAMethods:        []string{"microsoftAuthenticator"},
		LastSignIn:        g.date(1),
	}
	if admin {
		u.Roles = []string{"Governance.Admin"}
		u.IsPrivileged = true
		u.MFAMethods = []string{"fido2", "microsoftAuthenticator"}
	}
	return u
}

func ptr[T any](v T) *T { return &v }

func (g *demoGen) user(dt *demoTenant, k userKind) User {
	domain := dt.spec.domains[0]
	if k == kindGuest {
		domain = pick(g, demoGuestDomains...)
	}
	var first, last, email string
	for {
		first, last = pick(g, demoFirstNames...), pick(g, demoLastNames...)
		email = strings.ToLower(first+"."+last) + "@" + domain
		if !g.emails[email] {
			break
		}
	}
	u := User{
		Email:             email,
		Name:              first + " " + last,
		DirectoryTenantID: dt.t.DirectoryTenantID,
		Roles:             []string{},
		Groups:            slices.Clone(dt.t.AccessGroups),
		UserType:          "Member",
		AccountEnabled:    ptr(true),
		MFARegistered:     true,
		LastSignIn:        g.date(g.r.IntN(14)),
	}
	switch k {
	case kindNoMFA, kindPrivilegedNoMFA:
		u.MFARegistered = false
	case kindGuest:
		u.UserType = "Guest"
		u.MFARegistered = g.r.IntN(2) == 0
		u.LastSignIn = g.date(g.r.IntN(60))
		// Only some guests were given tenant access.
		if g.r.IntN(2) == 0 {
			u.Groups = []string{}
		}
	case kindStale:
		u.LastSignIn = g.date(120 + g.r.IntN(300))
	case kindDisabled:
		u.AccountEnabled = ptr(false)
		u.MFARegistered = g.r.IntN(2) == 0
		u.LastSignIn = g.date(60 + g.r.IntN(300))
	case kindAdmin:
		u.Roles = []string{"Governance.Admin"}
	}
	u.IsPrivileged = k == kindPrivileged || k == kindPrivilegedNoMFA || k == kindAdmin
	u.MFAMethods = []string{}
	if u.MFARegistered {
		perm := g.r.Perm(len(demoMFAMethods))
		for _, m := range perm[:1+g.r.IntN(2)] {
			u.MFAMethods = append(u.MFAMethods, demoMFAMethods[m])
		}
	}
	return u
}

var demoReviewStatuses = []string{"Completed", "InProgress", "NotStarted"}

func (g *demoGen) accessReviews() {
	for i, dt := range g.ts {
		group := dt.t.AccessGroups[0]
		reviews := []struct {
			name string
			who  func(User) bool
		}{
			{"Quarterly access review: " + group + " members", func(u User) bool { return len(u.Groups) > 0 }},
			{"Guest access review", func(u User) bool { return u.UserType == "Guest" }},
			{"Privileged access review", func(u User) bool { return u.IsPrivileged }},
		}
		for j, rv := range reviews {
			// Rotating the statuses puts each one in every tenant.
			status := demoReviewStatuses[(i+j)%len(demoReviewStatuses)]
			decisions := []Decision{}
			for _, u := range dt.users {
				if !rv.who(u) {
					continue
				}
				decision := "NotReviewed"
				switch {
				case status == "NotStarted", status == "InProgress" && g.r.IntN(2) == 0:
					// Not reached yet.
				case *u.AccountEnabled && u.LastSignIn >= g.date(90):
					decision = "Approve"
				default:
					// Reviewers remove disabled and stale accounts.
					decision = "Deny"
				}
				decisions = append(decisions, Decision{User: u.Email, Decision: decision})
			}
			g.w.AccessReviews = append(g.w.AccessReviews, AccessReview{
				DirectoryTenantID: dt.t.DirectoryTenantID,
				ID:                g.guid(),
				Name:              rv.name,
				Status:            status,
				Decisions:         decisions,
			})
		}
	}
}

// demoMail is a domain's mail authentication posture. Together the domains
// cover strong (DMARC p=reject with reports, DKIM, SPF -all), weak (p=none,
// pct below 100, SPF ~all or over its lookup limit, a 1024-bit DKIM key)
// and missing (no DMARC, no DKIM) setups.
type demoMail struct {
	dmarc string // policy, "" for no DMARC record
	pct   int    // 0 leaves the tag out (meaning 100)
	dkim  string // "cname", "txt" or "" for no selectors
	bits  int    // the DKIM keys' RSA length
	spf   string // SPF's final mechanism, "" for no SPF record
	// spfRelays lists a partner's relays one by one in an included record,
	// taking SPF past its limit of ten DNS lookups.
	spfRelays bool
	mx        string // "m365" for Exchange Online, "null" for a null MX, "" for none
	// mtaSTS is the MTA-STS setup: a policy in mode "enforce" or
	// "testing", "stale" for an enforced policy naming an MX host the
	// domain no longer uses, "unserved" for a record whose policy host
	// answers 404, "" for none.
	mtaSTS string
	// tlsRPT is the TLS reporting record: "valid", "http" for one whose
	// only address is plain http, "" for none.
	tlsRPT string
	bimi   bool // a BIMI record with a logo and a mark certificate
	dnssec bool // the zone is signed
}

var demoMailPosture = map[string]demoMail{
	"contoso-retail.example": {dmarc: "reject", pct: 100, dkim: "cname", bits: 2048, spf: "-all", mx: "m365",
		mtaSTS: "enforce", tlsRPT: "valid", bimi: true, dnssec: true},
	"contoso-shop.example": {dmarc: "none", dkim: "txt", bits: 1024, spf: "~all", mx: "m365",
		tlsRPT: "valid", bimi: true, dnssec: true},
	"contoso-retail-dev.example": {},
	"fabrikam-foods.example": {dmarc: "quarantine", pct: 50, dkim: "cname", bits: 2048, spf: "-all", mx: "m365",
		mtaSTS: "unserved", tlsRPT: "valid"},
	"fabrikam-foods-dev.example": {dmarc: "reject", spf: "-all", mx: "null", dnssec: true},
	"northwind-travel.example": {dmarc: "reject", pct: 100, dkim: "txt", bits: 2048, spf: "-all", mx: "m365",
		mtaSTS: "testing", dnssec: true},
	"northwind-holidays.example": {dkim: "cname", bits: 2048, spf: "~all", spfRelays: true, mx: "m365",
		mtaSTS: "stale", tlsRPT: "http"},
}

// demoRelays is how many relays a partner's SPF record lists by name.
const demoRelays = 8

// dns publishes each domain's mail records. The simulated DNS answers
// for the tenants' domains only, so what Exchange Online publishes in its
// own zones lives in the tenant's first domain instead: its sending
// ranges at _spf.<first domain>, which a domain's SPF includes in place
// of spf.protection.outlook.com, and the DKIM keys the selectors' CNAMEs
// point to, in place of the tenant's onmicrosoft.com zone. MX records
// name Exchange Online's hosts, which need not resolve.
func (g *demoGen) dns() {
	add := func(name, typ, value string) {
		g.w.DNS = append(g.w.DNS, DNSRecord{Name: name, Type: typ, Value: value})
	}
	for _, dt := range g.ts {
		first := dt.spec.domains[0]
		if slices.ContainsFunc(dt.spec.domains, func(d string) bool { return demoMailPosture[d].spf != "" }) {
			add("_spf."+first, "TXT", fmt.Sprintf("v=spf1 ip4:198.51.100.%d/26 ip6:2001:db8:%x::/48 a:smtp.%s -all", 64*dt.spec.brand, 0x100+dt.spec.brand, first))
			add("smtp."+first, "A", fmt.Sprintf("203.0.113.%d", 10+dt.spec.brand))
		}
		for _, domain := range dt.spec.domains {
			m := demoMailPosture[domain]
			dashed := strings.ReplaceAll(domain, ".", "-")
			switch m.mx {
			case "m365":
				add(domain, "MX", "0 "+dashed+".mail.protection.outlook.com")
			case "null":
				add(domain, "MX", "0 .")
			}
			if m.spf != "" {
				v := "v=spf1 include:_spf." + first
				if m.spfRelays {
					v += " include:_spf-partner." + domain
					relays := "v=spf1"
					for i := 1; i <= demoRelays; i++ {
						relays += fmt.Sprintf(" a:relay%d.%s", i, domain)
						add(fmt.Sprintf("relay%d.%s", i, domain), "A", fmt.Sprintf("192.0.2.%d", i))
					}
					add("_spf-partner."+domain, "TXT", relays+" -all")
				}
				// The SPF record is the last at the domain's name, where the
				// demo's tests read it.
				add(domain, "TXT", v+" "+m.spf)
			}
			if m.dmarc != "" {
				v := "v=DMARC1; p=" + m.dmarc
				if m.pct != 0 {
					v += fmt.Sprintf("; pct=%d", m.pct)
				}
				v += "; rua=mailto:dmarc-reports@" + domain
				add("_dmarc."+domain, "TXT", v)
			}
			g.transport(domain, m)
			for _, selector := range []string{"selector1", "selector2"} {
				name := selector + "._domainkey." + domain
				switch m.dkim {
				case "cname":
					// Exchange Online's form: the selector delegates to a key
					// record Microsoft publishes for the domain.
					target := fmt.Sprintf("%s-%s._domainkey.%s", selector, dashed, first)
					add(name, "CNAME", target)
					add(target, "TXT", "v=DKIM1; k=rsa; p="+g.dkimKey(m.bits))
				case "txt":
					add(name, "TXT", "v=DKIM1; k=rsa; p="+g.dkimKey(m.bits))
				}
			}
		}
	}
}

// transport publishes a domain's MTA-STS record and policy, TLS-RPT and
// BIMI records, and signs its zone, as demoMailPosture says.
func (g *demoGen) transport(domain string, m demoMail) {
	add := func(name, value string) {
		g.w.DNS = append(g.w.DNS, DNSRecord{Name: name, Type: "TXT", Value: value})
	}
	if m.mtaSTS != "" {
		add("_mta-sts."+domain, "v=STSv1; id=20260301T000000")
		mode, mx := m.mtaSTS, "*.mail.protection.outlook.com"
		if m.mtaSTS == "stale" {
			mode, mx = "enforce", "mx1."+domain
		}
		if m.mtaSTS != "unserved" {
			g.w.MTASTS = append(g.w.MTASTS, MTASTSPolicy{Domain: domain,
				Policy: "version: STSv1\r\nmode: " + mode + "\r\nmx: " + mx + "\r\nmax_age: 1209600\r\n"})
		}
	}
	switch m.tlsRPT {
	case "valid":
		add("_smtp._tls."+domain, "v=TLSRPTv1; rua=mailto:tls-reports@"+domain)
	case "http":
		add("_smtp._tls."+domain, "v=TLSRPTv1; rua=http://reports."+domain+"/tls")
	}
	if m.bimi {
		add("default._bimi."+domain, "v=BIMI1; l=https://brand."+domain+"/logo.svg; a=https://brand."+domain+"/vmc.pem")
	}
	if m.dnssec {
		g.w.DNSSEC = append(g.w.DNSSEC, domain)
	}
}

// dkimKey returns a base64 SubjectPublicKeyInfo of an RSA key of the
// given length with a random modulus: it parses like a real DKIM key
// without the cost of generating one.
func (g *demoGen) dkimKey(bits int) string {
	b := make([]byte, 0, bits/8)
	for range bits / 64 {
		b = binary.BigEndian.AppendUint64(b, g.r.Uint64())
	}
	b[0] |= 0x80     // a full-length modulus
	b[len(b)-1] |= 1 // RSA moduli are odd
	der, err := x509.MarshalPKIXPublicKey(&rsa.PublicKey{N: new(big.Int).SetBytes(b), E: 65537})
	if err != nil {
		panic(err) // a positive modulus always marshals
	}
	return base64.StdEncoding.EncodeToString(der)
}

// anomalyOn reports which cost series spikes on day n and by what factor,
// or -1. The schedule depends on the seed and the day only.
func (g *demoGen) anomalyOn(n int64, series int) (int, float64) {
	cycle := n / anomalyCycle
	if n < 0 && n%anomalyCycle != 0 {
		cycle--
	}
	r := keyed(g.seed, streamAnomaly, 0, cycle)
	start := cycle*anomalyCycle + int64(r.IntN(anomalyJitter))
	length := 1 + int64(r.IntN(2))
	which := r.IntN(series)
	factor := 3 + 5*r.Float64()
	if n < start || n >= start+length {
		return -1, 0
	}
	return which, factor
}

func (g *demoGen) costs() {
	series, billed := 0, 0
	for _, sub := range g.subs {
		series += len(sub.series)
		billed += len(sub.billed)
	}
	g.w.Costs = make([]Cost, 0, 365*(series+billed))
	for n := g.day - 364; n <= g.day; n++ {
		date := time.Unix(n*secondsPerDay, 0).UTC()
		day := date.Format(DateLayout)
		weekend := date.Weekday() == time.Saturday || date.Weekday() == time.Sunday
		years := float64(n-growthEpoch) / 365.25
		spiked, factor := g.anomalyOn(n, series)
		k := 0
		for _, sub := range g.subs {
			for _, s := range sub.series {
				r := keyed(g.seed, streamCost, uint64(k), n)
				season := 1 + s.seasonAmp*math.Cos(2*math.Pi*float64(date.YearDay()-s.seasonPeak)/365.25)
				v := s.base * math.Exp(s.growth*years) * season * (0.92 + 0.16*r.Float64())
				if weekend {
					v *= s.weekend
				}
				if k == spiked {
					v *= factor
				}
				row := Cost{SubscriptionID: sub.id, Date: day, Service: s.service.name, ResourceGroup: s.service.rg, Currency: "USD"}
				cents := int64(math.Round(v * 100))
				if len(s.shares) == 0 {
					row.Cost = float64(cents) / 100
					g.w.Costs = append(g.w.Costs, row)
				}
				for j, c := range split(cents, s.shares) {
					if c > 0 {
						row.ResourceID, row.Cost = s.shares[j].id, float64(c)/100
						g.w.Costs = append(g.w.Costs, row)
					}
				}
				k++
			}
			for _, b := range sub.billed {
				g.w.Costs = append(g.w.Costs, Cost{SubscriptionID: sub.id, Date: day, Service: b.service, ResourceGroup: b.rg,
					ResourceID: b.id, Cost: b.daily, Currency: "USD"})
			}
		}
	}
}

// vmSizeWeight is what a virtual machine of each size the demo uses costs
// an hour relative to a Standard_D2s_v3, near enough to their list prices.
var vmSizeWeight = map[string]float64{"Standard_B2ms": 0.8, "Standard_D2s_v3": 1, "Standard_D4s_v5": 2, "Standard_E4s_v5": 2.6}

// shares finds the resources each series' cost is split among: those of
// its service's type in its resource group. A virtual machine weighs as
// its size costs, and one deallocated bills no compute, so none; any
// other resource weighs what its id hashes to, between 0.6 and 1.4, so
// the estate's random draws stay as they were.
func (g *demoGen) shares() {
	for _, sub := range g.subs {
		for i := range sub.series {
			se := &sub.series[i]
			if se.service.resourceType == "" {
				continue
			}
			for _, r := range sub.byType[se.service.resourceType] {
				if !strings.Contains(r.ID, "/resourceGroups/"+se.service.rg+"/") {
					continue
				}
				h := fnv.New64a()
				h.Write([]byte(r.ID))
				w := 0.6 + 0.8*float64(h.Sum64()%1000)/1000
				if se.service.resourceType == typeVM {
					w = vmWeight(r)
				}
				if w > 0 {
					se.shares = append(se.shares, demoShare{id: r.ID, weight: w})
				}
			}
		}
	}
}

// vmWeight is a virtual machine's weight among its series' resources.
func vmWeight(r Resource) float64 {
	if ext, ok := r.Properties["extended"].(map[string]any); ok {
		if view, ok := ext["instanceView"].(map[string]any); ok {
			if power, ok := view["powerState"].(map[string]any); ok && power["code"] == "PowerState/deallocated" {
				return 0
			}
		}
	}
	hw, _ := r.Properties["hardwareProfile"].(map[string]any)
	size, _ := hw["vmSize"].(string)
	return vmSizeWeight[size]
}

// split divides cents among the shares by weight, exactly: each takes the
// whole cents of its part, and the cents left over go one each to the
// shares with the largest fractions left, the earlier first on a tie.
func split(cents int64, shares []demoShare) []int64 {
	total := 0.0
	for _, s := range shares {
		total += s.weight
	}
	out := make([]int64, len(shares))
	frac := make([]float64, len(shares))
	left := cents
	for i, s := range shares {
		exact := float64(cents) * s.weight / total
		out[i] = int64(math.Floor(exact))
		frac[i] = exact - float64(out[i])
		left -= out[i]
	}
	order := make([]int, len(shares))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(frac[b], frac[a]) })
	for i := 0; left > 0 && len(order) > 0; i, left = (i+1)%len(order), left-1 {
		out[order[i]]++
	}
	return out
}

// reservations writes the billed reservations' last 90 days of use,
// their purchases and two recommendations to buy more. Nothing is drawn
// from g.r: the purchases are fixed relative to today.
func (g *demoGen) reservations() {
	if len(g.billed) == 0 {
		return
	}
	for k, res := range g.billed {
		p := demoPurchases[k]
		bought := g.today.AddDate(-TermYears[p.term], 0, p.expiresIn)
		g.w.ReservationPurchases = append(g.w.ReservationPurchases, ReservationPurchase{
			BillingAccountID: g.account, ReservationID: res.id, Name: fmt.Sprintf("%s-%s", res.sku, bought.Format("20060102")),
			SKU: res.sku, Region: "eastus", Term: p.term, PurchaseDate: bought.Format(DateLayout), Quantity: res.reserved / 24,
			Amount: p.amount, Currency: "USD", InstanceFlexibilityGroup: p.group, InstanceFlexibilityRatio: p.ratio,
		})
	}
	firstUse := g.today.AddDate(0, 0, -120).Format(DateLayout)
	g.w.ReservationRecommendations = append(g.w.ReservationRecommendations,
		ReservationRecommendation{BillingAccountID: g.account, SKU: "Standard_D4s_v5", Location: "eastus", Term: "P1Y", Scope: "Shared",
			ResourceType: "VirtualMachines", LookBackDays: 30, RecommendedQuantity: 3, NormalizedSize: "Standard_D2s_v5",
			InstanceFlexibilityGroup: "DSv5 Series", InstanceFlexibilityRatio: 2,
			CostWithoutReservations: 1012.46, CostWithReservations: 761.12, NetSavings: 251.34, Currency: "USD", FirstUsageDate: firstUse},
		ReservationRecommendation{BillingAccountID: g.account, SKU: "Standard_E4s_v5", Location: "westeurope", Term: "P3Y", Scope: "Shared",
			ResourceType: "VirtualMachines", LookBackDays: 30, RecommendedQuantity: 2, NormalizedSize: "Standard_E2s_v5",
			InstanceFlexibilityGroup: "ESv5 Series", InstanceFlexibilityRatio: 2,
			CostWithoutReservations: 498.30, CostWithReservations: 271.44, NetSavings: 226.86, Currency: "USD", FirstUsageDate: firstUse})
	for n := g.day - 89; n <= g.day; n++ {
		day := time.Unix(n*secondsPerDay, 0).UTC().Format(DateLayout)
		for k, res := range g.billed {
			r := keyed(g.seed, streamReservation, uint64(k), n)
			use := min(1, max(0, res.use+0.1*(r.Float64()-0.5)))
			g.w.Reservations = append(g.w.Reservations, Reservation{
				BillingAccountID: g.account,
				ReservationID:    res.id,
				SKU:              res.sku,
				Date:             day,
				ReservedHours:    res.reserved,
				// Rounded down so used never exceeds reserved.
				UsedHours: math.Floor(res.reserved*use*100) / 100,
			})
		}
	}
}

// exchangeRates publishes the USD rates of EUR, GBP and JPY on each
// weekday of the year ending today, at the decimals central banks quote
// (four, two for JPY). Each is a smooth walk of the date alone, so a day's
// rate never changes as the world moves on, and it draws nothing from g.r.
func (g *demoGen) exchangeRates() {
	x := &ExchangeRates{Base: "USD", Rates: map[string]map[string]float64{}}
	for n := g.day - 364; n <= g.day; n++ {
		t := time.Unix(n*secondsPerDay, 0).UTC()
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			continue
		}
		f := float64(n)
		x.Rates[t.Format(DateLayout)] = map[string]float64{
			"EUR": math.Round((0.92+0.03*math.Sin(f/37)+0.005*math.Sin(f/3.1))*1e4) / 1e4,
			"GBP": math.Round((0.79+0.02*math.Sin(f/53+1)+0.004*math.Sin(f/2.3))*1e4) / 1e4,
			"JPY": math.Round((150+6*math.Sin(f/41+2)+0.8*math.Sin(f/2.7))*100) / 100,
		}
	}
	g.w.ExchangeRates = x
}

// demoSavingsPlan is a demo savings plan: its ids, term, hourly
// commitment in USD, the day it ends relative to today and its typical
// utilisation.
type demoSavingsPlan struct {
	order, id, name string
	term            string
	hourly          float64
	expiresIn       int
	use             float64
}

var demoSavingsPlans = []demoSavingsPlan{
	{"5f0e7c1a-3b2d-4e8f-9a61-2c4d6e8f0a12", "8c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e5", "Compute-SP-1Y", "P1Y", 2.50, 12, 0.78},
	{"7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d", "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "Compute-SP-3Y", "P3Y", 1.75, 400, 0.96},
}

// savingsPlans writes the billing account's savings plans with their last
// 90 days of utilisation, and one recommendation to buy another. Nothing
// is drawn from g.r: the purchases are fixed relative to today and each
// day's utilisation depends only on the seed and its date.
func (g *demoGen) savingsPlans() {
	if g.account == "" {
		return
	}
	for k, sp := range demoSavingsPlans {
		bought := g.today.AddDate(-TermYears[sp.term], 0, sp.expiresIn)
		plan := SavingsPlan{BillingAccountID: g.account, SavingsPlanOrderID: sp.order, SavingsPlanID: sp.id, Name: sp.name,
			Term: sp.term, PurchaseDate: bought.Format(DateLayout), HourlyCommitment: sp.hourly, Currency: "USD"}
		for n := g.day - 89; n <= g.day; n++ {
			r := keyed(g.seed, streamSavingsPlan, uint64(k), n)
			avg := math.Round(min(100, max(0, 100*sp.use+10*(r.Float64()-0.5)))*100) / 100
			low := math.Round(max(0, avg-5-10*r.Float64())*100) / 100
			high := math.Round(min(100, avg+5*r.Float64())*100) / 100
			plan.Utilization = append(plan.Utilization, SavingsPlanDay{Date: time.Unix(n*secondsPerDay, 0).UTC().Format(DateLayout),
				MinUtilization: low, AvgUtilization: avg, MaxUtilization: high})
		}
		g.w.SavingsPlans = append(g.w.SavingsPlans, plan)
	}
	g.w.BenefitRecommendations = append(g.w.BenefitRecommendations, BenefitRecommendation{
		BillingAccountID: g.account, Term: "P3Y", LookBackDays: 30, CommitmentAmount: 1.20, Currency: "USD",
		CostWithoutBenefit: 2150.40, SavingsAmount: 412.56, AverageUtilization: 98.6, Coverage: 71.2,
		FirstConsumptionDate: g.today.AddDate(0, 0, -30).Format(DateLayout), LastConsumptionDate: g.today.AddDate(0, 0, -1).Format(DateLayout)})
}

// demoAssessments are the Defender for Cloud recommendations the demo
// assesses, each on the resources of one type by the same property its
// policy of the same name reads, under one security control of the
// secure score worth max points.
var demoAssessments = []struct {
	name, category, severity, target string
	healthy                          func(map[string]any) bool
	control                          string
	max                              int
	remediation                      string
}{
	{"Secure transfer to storage accounts should be enabled", "Data", "High", typeStorage,
		propIs("supportsHttpsTrafficOnly", true), "Encrypt data in transit", 4,
		"In the storage account's Configuration, set Secure transfer required to Enabled."},
	{"Storage accounts should have the specified minimum TLS version", "Data", "Medium", typeStorage,
		propIs("minimumTlsVersion", "TLS1_2"), "Encrypt data in transit", 4,
		"In the storage account's Configuration, set Minimum TLS version to 1.2."},
	{"Key vaults should have deletion protection enabled", "Data", "Medium", typeKeyVault,
		propIs("enablePurgeProtection", true), "Enable data recovery", 2,
		"In the key vault's Properties, enable purge protection."},
	{"Azure SQL Database should be running TLS version 1.2 or newer", "Data", "Medium", typeSQLServer,
		propIs("minimalTlsVersion", "1.2"), "Encrypt data in transit", 4,
		"In the SQL server's Networking, set Minimum TLS version to 1.2."},
}

// securityAssessments assesses every subscription's resources under
// demoAssessments and scores each subscription's controls: a control's
// current score is its max times its healthy share of the resources it
// assessed, to two decimals. Nothing is drawn from the generator, so the
// rest of the world is as it was without them; assessment and control
// keys derive from their names, as built-in ones are the same everywhere.
func (g *demoGen) securityAssessments() {
	for _, s := range g.subs {
		type tally struct{ healthy, unhealthy, max int }
		controls := map[string]*tally{}
		var order []string
		for _, a := range demoAssessments {
			targets := s.byType[a.target]
			if len(targets) == 0 {
				continue
			}
			c := controls[a.control]
			if c == nil {
				c = &tally{max: a.max}
				controls[a.control] = c
				order = append(order, a.control)
			}
			for _, res := range targets {
				status := "Healthy"
				if a.healthy(res.Properties) {
					c.healthy++
				} else {
					status = "Unhealthy"
					c.unhealthy++
				}
				g.w.SecurityAssessments = append(g.w.SecurityAssessments, SecurityAssessment{SubscriptionID: s.id, ResourceID: res.ID,
					Name: demoKey("assessment:" + a.name), DisplayName: a.name, Status: status, Severity: a.severity,
					PolicyDefinitionID: policyDefinitionID(a.name), RemediationDescription: a.remediation, Category: a.category})
			}
		}
		if len(order) == 0 {
			continue
		}
		score := SecureScore{SubscriptionID: s.id}
		for _, name := range order {
			c := controls[name]
			current := math.Round(float64(c.max)*float64(c.healthy)/float64(c.healthy+c.unhealthy)*100) / 100
			score.Controls = append(score.Controls, SecureScoreControl{Name: demoKey("control:" + name), DisplayName: name,
				Current: current, Max: c.max, HealthyResources: c.healthy, UnhealthyResources: c.unhealthy})
		}
		g.w.SecureScores = append(g.w.SecureScores, score)
	}
}

// demoKey is the GUID a built-in Defender object of the given name has.
func demoKey(name string) string {
	sum := sha256.Sum256([]byte("defender:" + name))
	return formatGUID([16]byte(sum[:16]))
}

// conditionalAccess gives each tenant its Conditional Access policies, or
// security defaults, as Demo's doc says. Nothing is drawn from g.r: the
// policies' ids derive from their tenant and name.
func (g *demoGen) conditionalAccess() {
	policy := func(t *Tenant, name, state string, p ConditionalAccessPolicy) ConditionalAccessPolicy {
		p.DirectoryTenantID, p.Name, p.State = t.DirectoryTenantID, name, state
		p.ID = uuid.NewSHA1(uuid.NameSpaceURL, []byte("conditional-access:"+t.DirectoryTenantID+"/"+name)).String()
		return p
	}
	mfaAll := ConditionalAccessPolicy{IncludeUsers: []string{"All"}, GrantControls: []string{"mfa"}}
	mfaAdmins := ConditionalAccessPolicy{IncludeRoles: []string{GlobalAdministratorRole}, GrantControls: []string{"mfa"}}
	legacy := ConditionalAccessPolicy{IncludeUsers: []string{"All"}, ClientAppTypes: []string{"exchangeActiveSync", "other"},
		GrantControls: []string{"block"}}
	const on, reportOnly, off = "enabled", "enabledForReportingButNotEnforced", "disabled"
	setups := [][]struct {
		name, state string
		p           ConditionalAccessPolicy
	}{
		{{"Require MFA for all users", on, mfaAll}, {"Require MFA for administrators", on, mfaAdmins}, {"Block legacy authentication", on, legacy}},
		{{"Require MFA for all users", reportOnly, mfaAll}, {"Block legacy authentication", off, legacy}},
		nil,
		nil,
		{{"Require MFA for administrators", on, mfaAdmins}, {"Block legacy authentication", reportOnly, legacy}},
	}
	for i := range g.w.Tenants {
		t := &g.w.Tenants[i]
		for _, p := range setups[i] {
			g.w.ConditionalAccessPolicies = append(g.w.ConditionalAccessPolicies, policy(t, p.name, p.state, p.p))
		}
	}
	g.w.Tenants[2].SecurityDefaults = true
}

// eligibleAdmins makes two members of the first tenant eligible Global
// Administrators: its well-known standard user and its first other
// enabled member who holds no role. Nothing is drawn from g.r.
func (g *demoGen) eligibleAdmins() {
	dt := g.ts[0]
	for _, u := range dt.users {
		if u.Email == dt.spec.wellKnown || !u.IsPrivileged && u.UserType == "Member" && *u.AccountEnabled && len(u.Roles) == 0 {
			g.w.RoleAssignments = append(g.w.RoleAssignments, RoleAssignment{DirectoryTenantID: dt.t.DirectoryTenantID, Principal: u.Email, Kind: "eligible"})
		}
		if len(g.w.RoleAssignments) == 2 {
			return
		}
	}
}

// riskyUsers gives Fabrikam Foods' first member without MFA a high risk
// and Northwind Travel's first guest a remediated medium one. Nothing is
// drawn from g.r.
func (g *demoGen) riskyUsers() {
	mark := func(tenant int, pick func(User) bool, level, state string) {
		for i := range g.w.Users {
			u := &g.w.Users[i]
			if u.DirectoryTenantID == g.ts[tenant].t.DirectoryTenantID && pick(*u) {
				u.RiskLevel, u.RiskState = level, state
				return
			}
		}
	}
	mark(2, func(u User) bool { return u.UserType == "Member" && !u.MFARegistered && *u.AccountEnabled }, "high", "atRisk")
	mark(4, func(u User) bool { return u.UserType == "Guest" }, "medium", "remediated")
}

// applications registers an application or a service principal in three
// tenants, their credentials ending relative to today as Demo's doc says.
// Nothing is drawn from g.r.
func (g *demoGen) applications() {
	in := func(days int) string { return g.date(-days) }
	g.w.Applications = append(g.w.Applications,
		Application{DirectoryTenantID: g.ts[0].t.DirectoryTenantID, Name: "Storefront API", Credentials: []AppCredential{
			{Type: "password", Name: "storefront-ci", EndDate: in(12)}, {Type: "certificate", Name: "api.contoso-shop.example", EndDate: in(300)}}},
		Application{DirectoryTenantID: g.ts[2].t.DirectoryTenantID, Name: "Supplier portal", Credentials: []AppCredential{
			{Type: "password", Name: "portal-prod", EndDate: in(-5)}}},
		Application{DirectoryTenantID: g.ts[4].t.DirectoryTenantID, Name: "Booking partner gateway", ServicePrincipal: true, Credentials: []AppCredential{
			{Type: "certificate", Name: "gateway.northwind-travel.example", EndDate: in(90)}}},
	)
}

// reviewFigures adds the two access reviews Demo's doc promises for the
// access review findings and the overdue reviews: Fabrikam Foods'
// completed review approving each of its enabled privileged users, one of
// whom has no MFA, and Contoso Retail's review of its enabled members still
// in progress ten days after its end. Nothing is drawn from g.r: the
// reviews' ids derive from their tenant and name.
func (g *demoGen) reviewFigures() {
	review := func(tenant int, name, status, end string, who func(User) bool, decision string) {
		dt := g.ts[tenant]
		r := AccessReview{DirectoryTenantID: dt.t.DirectoryTenantID, Name: name, Status: status, EndDate: end, Decisions: []Decision{},
			ID: uuid.NewSHA1(uuid.NameSpaceURL, []byte("access-review:"+dt.t.DirectoryTenantID+"/"+name)).String()}
		for _, u := range dt.users {
			if *u.AccountEnabled && who(u) {
				r.Decisions = append(r.Decisions, Decision{User: u.Email, Decision: decision})
			}
		}
		g.w.AccessReviews = append(g.w.AccessReviews, r)
	}
	review(2, "Global Administrator access review", "Completed", "", func(u User) bool { return u.IsPrivileged }, "Approve")
	review(0, "Finance application owners review", "InProgress", g.date(10), func(u User) bool { return u.UserType == "Member" }, "NotReviewed")
}
