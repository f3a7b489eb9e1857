package graph

import (
	"fmt"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Intune managed devices.

func (srv *server) registerDevices(v string) {
	srv.handle("GET /"+v+"/deviceManagement/managedDevices", listManagedDevices)
}

// Device is a managed device the simulator derives for a user.
type Device struct {
	ID string
	// AzureADDeviceID is the device's object id in the directory.
	AzureADDeviceID string
	Name            string
	// OperatingSystem is Windows, macOS, iOS or Android.
	OperatingSystem string
	OSVersion       string
	Model           string
	Manufacturer    string
	// ComplianceState is compliant or noncompliant.
	ComplianceState string
	Encrypted       bool
	Enrolled        time.Time
	LastSync        time.Time
}

type platform struct {
	os, model, manufacturer string
	versions                []string
}

var platforms = []platform{
	{"Windows", "Surface Laptop 5", "Microsoft Corporation", []string{"10.0.22631.4602", "10.0.26100.2605"}},
	{"macOS", "MacBook Pro", "Apple", []string{"14.7.2", "15.2"}},
	{"iOS", "iPhone 15", "Apple", []string{"17.7.2", "18.2"}},
	{"Android", "Pixel 8", "Google", []string{"14", "15"}},
}

// Devices are a user's Intune-managed devices, derived from its object id
// so they are the same in every run. A guest enrols no devices in the
// inviting tenant and a user who never signed in has none; anyone else has
// zero to two. About a quarter are noncompliant, and only those can be
// unencrypted. A device was enrolled within 20 days of the user's creation
// and last synced in the two days before the user's last sign-in, so a
// disabled or stale account's devices are stale too.
func Devices(u world.User) []Device {
	signedIn, ok := lastSignIn(u)
	if !ok || userType(u) == "Guest" {
		return nil
	}
	oid := idp.ObjectID(u)
	created := createdBefore(u, signedIn)
	first, _, _ := strings.Cut(u.Name, " ")
	var out []Device
	for i := range int(draw(oid, "devices") % 3) {
		h := draw(oid, fmt.Sprintf("device/%d", i))
		p := platforms[h%uint64(len(platforms))]
		d := Device{
			ID:              derivedID("device", oid, fmt.Sprint(i)),
			AzureADDeviceID: derivedID("aad-device", oid, fmt.Sprint(i)),
			Name:            fmt.Sprintf("%s's %s", first, p.model),
			OperatingSystem: p.os,
			OSVersion:       p.versions[(h>>8)%uint64(len(p.versions))],
			Model:           p.model,
			Manufacturer:    p.manufacturer,
			ComplianceState: "compliant",
			Encrypted:       true,
			Enrolled:        created.AddDate(0, 0, 1+int((h>>16)%20)),
			LastSync:        signedIn.Add(-time.Duration((h>>24)%48) * time.Hour),
		}
		if p.os == "Windows" {
			d.Name = fmt.Sprintf("DESKTOP-%07X", (h>>32)&0xFFFFFFF)
		}
		if (h>>56)%4 == 0 {
			d.ComplianceState = "noncompliant"
			d.Encrypted = (h>>60)%2 == 0
		}
		out = append(out, d)
	}
	return out
}

type managedDeviceJSON struct {
	ID                     string `json:"id"`
	UserID                 string `json:"userId"`
	DeviceName             string `json:"deviceName"`
	ManagedDeviceOwnerType string `json:"managedDeviceOwnerType"`
	EnrolledDateTime       string `json:"enrolledDateTime"`
	LastSyncDateTime       string `json:"lastSyncDateTime"`
	OperatingSystem        string `json:"operatingSystem"`
	ComplianceState        string `json:"complianceState"`
	ManagementAgent        string `json:"managementAgent"`
	OSVersion              string `json:"osVersion"`
	AzureADRegistered      bool   `json:"azureADRegistered"`
	AzureADDeviceID        string `json:"azureADDeviceId"`
	EmailAddress           string `json:"emailAddress"`
	UserPrincipalName      string `json:"userPrincipalName"`
	UserDisplayName        string `json:"userDisplayName"`
	Model                  string `json:"model"`
	Manufacturer           string `json:"manufacturer"`
	IsEncrypted            bool   `json:"isEncrypted"`
}

func listManagedDevices(c *call) {
	users, devices := c.users(), c.directory().managedDevices()
	list(c, "deviceManagement/managedDevices", len(devices), func(i int) managedDeviceJSON {
		u, d := users[devices[i].user], devices[i].Device
		return managedDeviceJSON{
			ID: d.ID, UserID: idp.ObjectID(u), DeviceName: d.Name, ManagedDeviceOwnerType: "company",
			EnrolledDateTime: stamp(d.Enrolled), LastSyncDateTime: stamp(d.LastSync),
			OperatingSystem: d.OperatingSystem, ComplianceState: d.ComplianceState, ManagementAgent: "mdm",
			OSVersion: d.OSVersion, AzureADRegistered: true, AzureADDeviceID: d.AzureADDeviceID,
			EmailAddress: u.Email, UserPrincipalName: userPrincipalName(c.tenant, u), UserDisplayName: u.Name,
			Model: d.Model, Manufacturer: d.Manufacturer, IsEncrypted: d.Encrypted,
		}
	}, func(d managedDeviceJSON) map[string]any {
		return map[string]any{"complianceState": d.ComplianceState, "operatingSystem": d.OperatingSystem, "userPrincipalName": d.UserPrincipalName}
	})
}
