package roles

// Statements of ApplyPG and ApplyMySQL. Identifiers cannot be bound parameters: the PostgreSQL
// ones are quoted by the server (format %I/%L over bound values), the MySQL ones are checked
// against a strict pattern before they are spliced in.

const (
	// pgRoleExistsSQL: $1 role name.
	pgRoleExistsSQL = `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`
	// pgCreateRoleSQL renders CREATE ROLE: $1 name, $2 connection limit.
	pgCreateRoleSQL = `SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT %s', $1::text, $2::int)`
	// pgPasswordSQL renders ALTER ROLE … PASSWORD: $1 name, $2 SCRAM-SHA-256 verifier (never the
	// password itself, so it does not reach the server's statement log).
	pgPasswordSQL = `SELECT format('ALTER ROLE %I PASSWORD %L', $1::text, $2::text)`
	// pgSchemaSQL: $1 schema, $2 owner role, $3 the other roles (text[]).
	pgSchemaSQL = `SELECT ARRAY[
  format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', $1::text),
  format('GRANT USAGE, CREATE ON SCHEMA %I TO %I', $1::text, $2::text),
  format('GRANT USAGE ON SCHEMA %I TO %s', $1::text, (SELECT string_agg(quote_ident(r), ', ') FROM unnest($3::text[]) AS r))]`
	// pgRevokeSQL renders the revocation of every table, sequence and function privilege of role
	// $2 in schema $1, so that a grant dropped from the table is dropped on the server too.
	pgRevokeSQL = `SELECT ARRAY[
  format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', $1::text, $2::text),
  format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM %I', $1::text, $2::text),
  format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %I FROM %I', $1::text, $2::text)]`
	// pgRelKindSQL: $1 schema, $2 relation; 'r' table, 'S' sequence, NULL missing.
	pgRelKindSQL = `SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = $1 AND c.relname = $2`
	// pgGrantTableSQL: $1 privileges (from the code's table, not from input), $2 schema, $3 table, $4 role.
	pgGrantTableSQL    = `SELECT format('GRANT %s ON TABLE %I.%I TO %I', $1::text, $2::text, $3::text, $4::text)`
	pgGrantSequenceSQL = `SELECT format('GRANT USAGE ON SEQUENCE %I.%I TO %I', $1::text, $2::text, $3::text)`
	// pgFunctionExistsSQL: $1 schema, $2 function with its argument types, e.g. f(bigint) (from
	// the code's table, not from input).
	pgFunctionExistsSQL = `SELECT to_regprocedure(format('%I.%s', $1::text, $2::text)) IS NOT NULL`
	// pgGrantFunctionSQL: $1 schema, $2 function with its argument types, $3 role.
	pgGrantFunctionSQL = `SELECT format('GRANT EXECUTE ON FUNCTION %I.%s TO %I', $1::text, $2::text, $3::text)`
	// pgLeaseMemberSQL maps database role $2 to leader_lease role $3 in schema $1.
	pgLeaseMemberSQL = `SELECT format('INSERT INTO %I.leader_lease_member (db_role, role) VALUES (%L, %L)
  ON CONFLICT (db_role) DO UPDATE SET role = EXCLUDED.role', $1::text, $2::text, $3::text)`
	pgCurrentSchemaSQL = `SELECT current_schema()`
	// pgIsMemberSQL: is role $2 a direct member of predefined role $1?
	pgIsMemberSQL = `SELECT EXISTS (SELECT 1 FROM pg_auth_members m
  JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member WHERE g.rolname = $1 AND r.rolname = $2)`
	// pgGrantRoleSQL and pgRevokeRoleSQL render the membership of role $2 in predefined role $1.
	pgGrantRoleSQL  = `SELECT format('GRANT %I TO %I', $1::text, $2::text)`
	pgRevokeRoleSQL = `SELECT format('REVOKE %I FROM %I', $1::text, $2::text)`
)
