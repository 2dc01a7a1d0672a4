package readapi

// Every SQL statement of the read API, bound parameters only. The full states themselves are
// read by flightstore.Load (the same statement the processor loads flights with).

// dayFlidsSQL lists the FLIDs of one operation day, ACTIVE and DELETED, in FLID order
// (index flight_operation_day). $1: the day as YYYY-MM-DD.
const dayFlidsSQL = `SELECT flid FROM flight WHERE operation_day = $1::date ORDER BY flid`
