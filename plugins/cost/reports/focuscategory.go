package reports

import (
	"maps"
	"strings"
)

// serviceCategories maps an Azure service name, as Cost Management reports
// it in ServiceName (in lower case), to its FOCUS service category, as
// Azure's own FOCUS export categorises it: the services of the demo world
// and the common ones besides.
var serviceCategories = map[string]string{
	"azure machine learning":           "AI and Machine Learning",
	"machine learning":                 "AI and Machine Learning",
	"cognitive services":               "AI and Machine Learning",
	"azure ai services":                "AI and Machine Learning",
	"azure openai service":             "AI and Machine Learning",
	"azure bot service":                "AI and Machine Learning",
	"azure synapse analytics":          "Analytics",
	"azure databricks":                 "Analytics",
	"azure data factory":               "Analytics",
	"azure data factory v2":            "Analytics",
	"hdinsight":                        "Analytics",
	"stream analytics":                 "Analytics",
	"azure data explorer":              "Analytics",
	"microsoft fabric":                 "Analytics",
	"power bi embedded":                "Analytics",
	"dynamics 365":                     "Business Applications",
	"power platform":                   "Business Applications",
	"virtual machines":                 "Compute",
	"virtual machines licenses":        "Compute",
	"virtual machine scale sets":       "Compute",
	"azure kubernetes service":         "Compute",
	"container instances":              "Compute",
	"azure container apps":             "Compute",
	"container registry":               "Compute",
	"functions":                        "Compute",
	"azure functions":                  "Compute",
	"batch":                            "Compute",
	"cloud services":                   "Compute",
	"azure virtual desktop":            "Compute",
	"azure vmware solution":            "Compute",
	"sql database":                     "Databases",
	"azure sql database":               "Databases",
	"sql managed instance":             "Databases",
	"azure cosmos db":                  "Databases",
	"azure database for postgresql":    "Databases",
	"azure database for mysql":         "Databases",
	"azure database for mariadb":       "Databases",
	"redis cache":                      "Databases",
	"azure cache for redis":            "Databases",
	"azure devops":                     "Developer Tools",
	"visual studio subscription":       "Developer Tools",
	"azure devtest labs":               "Developer Tools",
	"azure load testing":               "Developer Tools",
	"azure arc":                        "Multicloud",
	"azure active directory":           "Identity",
	"azure active directory b2c":       "Identity",
	"microsoft entra id":               "Identity",
	"microsoft entra domain services":  "Identity",
	"api management":                   "Integration",
	"service bus":                      "Integration",
	"event grid":                       "Integration",
	"event hubs":                       "Integration",
	"logic apps":                       "Integration",
	"iot hub":                          "Internet of Things",
	"iot central":                      "Internet of Things",
	"azure digital twins":              "Internet of Things",
	"azure monitor":                    "Management and Governance",
	"log analytics":                    "Management and Governance",
	"application insights":             "Management and Governance",
	"insight and analytics":            "Management and Governance",
	"automation":                       "Management and Governance",
	"azure policy":                     "Management and Governance",
	"media services":                   "Media",
	"azure migrate":                    "Migration",
	"azure database migration service": "Migration",
	"notification hubs":                "Mobile",
	"virtual network":                  "Networking",
	"bandwidth":                        "Networking",
	"load balancer":                    "Networking",
	"application gateway":              "Networking",
	"vpn gateway":                      "Networking",
	"expressroute":                     "Networking",
	"azure dns":                        "Networking",
	"azure front door service":         "Networking",
	"content delivery network":         "Networking",
	"azure firewall":                   "Networking",
	"azure ddos protection":            "Networking",
	"azure bastion":                    "Networking",
	"nat gateway":                      "Networking",
	"network watcher":                  "Networking",
	"traffic manager":                  "Networking",
	"key vault":                        "Security",
	"microsoft defender for cloud":     "Security",
	"security center":                  "Security",
	"advanced threat protection":       "Security",
	"sentinel":                         "Security",
	"microsoft sentinel":               "Security",
	"storage":                          "Storage",
	"backup":                           "Storage",
	"azure netapp files":               "Storage",
	"azure site recovery":              "Storage",
	"azure app service":                "Web",
	"app service":                      "Web",
	"azure static web apps":            "Web",
	"signalr":                          "Web",
}

// ServiceCategories is a copy of the table: service name in lower case →
// FOCUS service category.
func ServiceCategories() map[string]string { return maps.Clone(serviceCategories) }

// ServiceCategory is the FOCUS service category of an Azure service name,
// Other for a service the table does not know.
func ServiceCategory(service string) string {
	if c, ok := serviceCategories[strings.ToLower(service)]; ok {
		return c
	}
	return "Other"
}
