package tenancy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Brand is a group of tenants, such as the tenants of one of the
// organisation's brands, that a scope, a page or a report can name as one.
// A tenant is in at most one brand.
type Brand struct {
	bun.BaseModel `bun:"table:brands"`
	ID            string    `bun:"id,pk" json:"id"`
	Name          string    `bun:"name" json:"name"`
	Description   string    `bun:"description" json:"description"`
	CreatedAt     time.Time `bun:"created_at" json:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at" json:"updated_at"`
	// TenantIDs are the brand's tenants, active or not, by tenant name;
	// a standard caller is shown only those it may see.
	TenantIDs []string `bun:"-" json:"tenant_ids" doc:"The brand's tenants, by name; a standard caller sees only the tenants it may see"`
}

// TenantConflictError is a tenant named for a brand while it is in another.
type TenantConflictError struct {
	// Index is the tenant's place in the list it was named in.
	Index    int
	TenantID string
	// Brand is the name of the brand the tenant is in.
	Brand string
}

func (e *TenantConflictError) Error() string {
	return fmt.Sprintf("tenant %s is in brand %q; a tenant is in at most one brand", e.TenantID, e.Brand)
}

// UnknownTenantError is a tenant id named for a brand that no tenant has.
type UnknownTenantError struct {
	Index    int
	TenantID string
}

func (e *UnknownTenantError) Error() string { return "no tenant " + e.TenantID }

// Brands lists every brand by name, each with its tenants.
func (s *Store) Brands(ctx context.Context) ([]Brand, error) {
	out := []Brand{}
	if err := s.db.NewSelect().Model(&out).OrderExpr("lower(name), id").Scan(ctx); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	var rows []brandTenant
	if err := s.db.NewSelect().Model((*Tenant)(nil)).Column("id", "brand_id").Where("brand_id IS NOT NULL").
		Order("name", "id").Scan(ctx, &rows); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].TenantIDs = []string{}
		for _, r := range rows {
			if r.BrandID == out[i].ID {
				out[i].TenantIDs = append(out[i].TenantIDs, r.ID)
			}
		}
	}
	return out, nil
}

// BrandNames returns the brands of the ids, by name, without their
// tenants: what a page's picker shows, in one query.
func (s *Store) BrandNames(ctx context.Context, ids []string) ([]Brand, error) {
	out := []Brand{}
	if len(ids) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Column("id", "name").Where("id IN (?)", bun.List(ids)).OrderExpr("lower(name), id").Scan(ctx)
	return out, err
}

type brandTenant struct {
	ID      string `bun:"id"`
	BrandID string `bun:"brand_id"`
}

// Brand returns one brand with its tenants; an unknown id is ErrNotFound.
func (s *Store) Brand(ctx context.Context, id string) (Brand, error) {
	return brandIn(ctx, s.db, id)
}

func brandIn(ctx context.Context, db bun.IDB, id string) (Brand, error) {
	var b Brand
	err := db.NewSelect().Model(&b).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return b, ErrNotFound
	}
	if err != nil {
		return b, err
	}
	b.TenantIDs = []string{}
	err = db.NewSelect().Model((*Tenant)(nil)).Column("id").Where("brand_id = ?", id).Order("name", "id").Scan(ctx, &b.TenantIDs)
	return b, err
}

// CreateBrand stores a new brand with the tenants given. A name another
// brand has, in any case, is ErrDuplicate; a tenant id no tenant has is an
// *UnknownTenantError and a tenant in another brand a *TenantConflictError,
// and then nothing is written.
func (s *Store) CreateBrand(ctx context.Context, b *Brand, tenantIDs []string) error {
	if b.ID == "" {
		b.ID = uuid.NewString()
	}
	now := time.Now().UTC()
	b.CreatedAt, b.UpdatedAt = now, now
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(b).Exec(ctx); err != nil {
			return duplicateName(err, b.Name)
		}
		if err := setBrandTenants(ctx, tx, b.ID, tenantIDs); err != nil {
			return err
		}
		stored, err := brandIn(ctx, tx, b.ID)
		*b = stored
		return err
	})
	if err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// BrandPatch names the fields an update changes; a nil field is left as
// it is.
type BrandPatch struct {
	Name        *string
	Description *string
	// TenantIDs, when set, replaces the brand's tenants: those left out
	// leave the brand.
	TenantIDs *[]string
}

// UpdateBrand applies p to the brand and returns it as stored, with the
// errors of CreateBrand and ErrNotFound for an unknown id.
func (s *Store) UpdateBrand(ctx context.Context, id string, p BrandPatch) (Brand, error) {
	var out Brand
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		b, err := brandIn(ctx, tx, id)
		if err != nil {
			return err
		}
		cols := []string{"updated_at"}
		if p.Name != nil {
			b.Name = *p.Name
			cols = append(cols, "name")
		}
		if p.Description != nil {
			b.Description = *p.Description
			cols = append(cols, "description")
		}
		b.UpdatedAt = time.Now().UTC()
		if _, err := tx.NewUpdate().Model(&b).Column(cols...).WherePK().Exec(ctx); err != nil {
			return duplicateName(err, b.Name)
		}
		if p.TenantIDs != nil {
			leave := tx.NewUpdate().Model((*Tenant)(nil)).Set("brand_id = NULL").Where("brand_id = ?", id)
			if len(*p.TenantIDs) > 0 {
				leave = leave.Where("id NOT IN (?)", bun.List(*p.TenantIDs))
			}
			if _, err := leave.Exec(ctx); err != nil {
				return err
			}
			if err := setBrandTenants(ctx, tx, id, *p.TenantIDs); err != nil {
				return err
			}
		}
		out, err = brandIn(ctx, tx, id)
		return err
	})
	if err != nil {
		return out, err
	}
	s.changed(ctx)
	return out, nil
}

// DeleteBrand removes a brand; its tenants are then in none. An unknown id
// is ErrNotFound.
func (s *Store) DeleteBrand(ctx context.Context, id string) error {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*Tenant)(nil)).Set("brand_id = NULL").Where("brand_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*Brand)(nil)).Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// tenantBrand is a tenant's brand, if it has one.
type tenantBrand struct {
	ID        string  `bun:"id"`
	BrandID   *string `bun:"brand_id"`
	BrandName *string `bun:"brand_name"`
}

// setBrandTenants puts the tenants into the brand, refusing an unknown
// tenant and one in another brand.
func setBrandTenants(ctx context.Context, tx bun.Tx, brandID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var found []tenantBrand
	if err := tx.NewSelect().TableExpr("tenants AS t").Join("LEFT JOIN brands AS b ON b.id = t.brand_id").
		ColumnExpr("t.id AS id, t.brand_id AS brand_id, b.name AS brand_name").Where("t.id IN (?)", bun.List(ids)).Scan(ctx, &found); err != nil {
		return err
	}
	for i, id := range ids {
		j := slices.IndexFunc(found, func(f tenantBrand) bool { return f.ID == id })
		switch {
		case j < 0:
			return &UnknownTenantError{Index: i, TenantID: id}
		case found[j].BrandID != nil && *found[j].BrandID != brandID:
			name := ""
			if found[j].BrandName != nil {
				name = *found[j].BrandName
			}
			return &TenantConflictError{Index: i, TenantID: id, Brand: name}
		}
	}
	_, err := tx.NewUpdate().Model((*Tenant)(nil)).Set("brand_id = ?", brandID).Set("updated_at = ?", time.Now().UTC()).
		Where("id IN (?)", bun.List(ids)).Exec(ctx)
	return err
}

// duplicateName reports a unique violation of a brand's name as
// ErrDuplicate.
func duplicateName(err error, name string) error {
	if isUniqueViolation(err) {
		return fmt.Errorf("%w: a brand is named %q", ErrDuplicate, name)
	}
	return err
}

// BrandScope narrows a scope to a brand: the tenants of scope that are in
// the brand, in the order of scope. A brand the caller cannot see — none
// has that id, or, unless admin, none of its active tenants is in scope —
// is ErrNotFound, so a standard caller cannot tell which brands exist.
func (s *Store) BrandScope(ctx context.Context, brandID string, scope []string, admin bool) ([]string, error) {
	if _, err := uuid.Parse(brandID); err != nil {
		return nil, ErrNotFound
	}
	tenants, err := s.Tenants(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, id := range scope {
		if i := slices.IndexFunc(tenants, func(t Tenant) bool { return t.ID == id }); i >= 0 && tenants[i].BrandID != nil && *tenants[i].BrandID == brandID {
			out = append(out, id)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if !admin {
		return nil, ErrNotFound
	}
	exists, err := s.db.NewSelect().Model((*Brand)(nil)).Where("id = ?", brandID).Exists(ctx)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, ErrNotFound
	}
	return out, nil
}
