/* A header cdpc ships so that its #include succeeds; what it declares is built into cdpc or
 * is host code. */
