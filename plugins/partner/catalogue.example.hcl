# An example requirements catalogue: the security requirements a partner
# bank imposes on the tenants that process its customers' data. Copy it,
# change the programme and the requirements, and name the copy in the
# partner plugin's config in plugins.hcl (catalogue_file).
#
# A requirement with a check block is checked automatically after each
# partner sync against a metric another plugin publishes:
#   mfa_coverage       accounts with MFA, percent        (identity plugin)
#   admin_mfa          directory role holders with MFA   (identity plugin)
#   device_compliance  compliant managed devices         (identity plugin)
#   compliance_score   compliant resources of evaluated  (compliance plugin)
#   framework_coverage a framework's controls a policy covers (compliance
#                      plugin; name the framework: soc2, nist_csf, …)
# The check is met when the metric reaches its target (value >= target).
# A requirement without a check is met by accepted evidence.

programme {
  partner         = "Northwind Bank"
  description     = "Third-party security requirements for suppliers that process Northwind customer data."
  deadline        = "2027-03-31"
  target_maturity = 3.5 # on 0 to 5
}

requirement "IAM-01" {
  title       = "Multi-factor authentication for every account"
  description = "Every member and guest account registers an MFA method."
  category    = "identity"
  priority    = "critical"
  evidence    = ["Conditional access policy requiring MFA", "MFA registration report"]
  check {
    metric = "mfa_coverage"
    target = 95
  }
}

requirement "IAM-02" {
  title       = "MFA for every privileged account"
  description = "Every holder of a directory role registers an MFA method."
  category    = "identity"
  priority    = "critical"
  evidence    = ["List of directory role holders with their MFA methods"]
  check {
    metric = "admin_mfa"
    target = 100
  }
}

requirement "IAM-03" {
  title       = "Quarterly access reviews of privileged roles"
  description = "Privileged role assignments are reviewed every quarter and stale assignments removed."
  category    = "identity"
  priority    = "high"
  evidence    = ["Access review results of the last two quarters"]
}

requirement "DEV-01" {
  title       = "Managed devices are compliant"
  description = "Devices that reach customer data are managed and meet the device compliance policy."
  category    = "identity"
  priority    = "high"
  evidence    = ["Device compliance policy", "Compliance report of managed devices"]
  check {
    metric = "device_compliance"
    target = 90
  }
}

requirement "DP-01" {
  title       = "Cloud resources comply with the security baseline"
  description = "Resources are evaluated against the Azure security baseline and non-compliance is remediated."
  category    = "data_protection"
  priority    = "high"
  evidence    = ["Policy compliance report"]
  check {
    metric = "compliance_score"
    target = 85
  }
}

requirement "DP-02" {
  title       = "Encryption at rest with customer-managed keys"
  description = "Storage and databases holding customer data are encrypted with keys the organisation controls."
  category    = "data_protection"
  priority    = "medium"
  evidence    = ["Key vault configuration", "Encryption settings of the data stores"]
}

requirement "DP-03" {
  title       = "SOC 2 controls covered by policy"
  description = "The SOC 2 trust services criteria are covered by assigned policies."
  category    = "data_protection"
  priority    = "medium"
  evidence    = ["Policy assignments mapped to SOC 2 criteria"]
  check {
    metric    = "framework_coverage"
    framework = "soc2"
    target    = 60
  }
}

requirement "LOG-01" {
  title       = "Security logs retained for a year"
  description = "Sign-in, audit and activity logs are kept for at least 365 days."
  category    = "logging"
  priority    = "high"
  evidence    = ["Diagnostic settings", "Log workspace retention settings"]
}

requirement "LOG-02" {
  title       = "NIST CSF detection controls covered"
  description = "The NIST Cybersecurity Framework's controls are covered by assigned policies."
  category    = "logging"
  priority    = "low"
  evidence    = ["Policy assignments mapped to NIST CSF"]
  check {
    metric    = "framework_coverage"
    framework = "nist_csf"
    target    = 50
  }
}

requirement "IR-01" {
  title       = "Incident response plan"
  description = "A tested incident response plan names who notifies Northwind, and within 24 hours."
  category    = "incident_response"
  priority    = "critical"
  evidence    = ["Incident response plan", "Record of the last exercise"]
}

requirement "IR-02" {
  title       = "Security contact on record"
  description = "A monitored security mailbox and an on-call number are registered with Northwind."
  category    = "incident_response"
  priority    = "medium"
  evidence    = ["Security contact registration"]
}

requirement "IR-03" {
  title       = "Annual penetration test"
  description = "An independent penetration test of internet-facing services each year, with findings tracked to closure."
  category    = "incident_response"
  priority    = "low"
  evidence    = ["Penetration test report", "Remediation tracker"]
}
