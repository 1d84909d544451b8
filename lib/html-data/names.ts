// Names in HTML data bindings: collections, fields, and the fields the platform stamps on every record.

/** A collection (and a named record): lowercase letters, digits, `-` and `_`, starting with a letter. */
export const collectionName = /^[a-z][a-z0-9_-]{0,39}$/;

/** A declared field: lowercase letters, digits and `_`, starting with a letter (so never a stamp). */
export const fieldName = /^[a-z][a-z0-9_]{0,39}$/;

/** Set by the platform from the verified identity and the clock, never by a form. */
export const stampFields = ['_id', '_author', '_created', '_updated'];
