package adapter;

/** A request the adapter answers with a protocol error of the given kind. */
final class Refused extends RuntimeException {
  private static final long serialVersionUID = 1L;
  final String kind;

  Refused(String kind, String message) {
    super(message);
    this.kind = kind;
  }
}
