"""Examples a user can copy: a complete engine adapter in one file."""
