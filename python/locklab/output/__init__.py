"""What the user gets: the table (plain and colored), exports, the HTML report, figures, and
the listings of the command line. Everything renders one analysis; nothing recomputes it."""
