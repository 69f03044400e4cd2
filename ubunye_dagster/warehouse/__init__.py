"""Tables in a database, hashed where they are: the settings that reach a warehouse, and the one
way a relation in it is hashed (in the database where a dialect writes rows-v1, else streamed)."""
